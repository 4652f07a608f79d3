// The relay's socket work alone, on SwiftNIO (issue 36): the relay side of `relay-floor.py`'s protocol, so that
// `relay-floor.py --relay nio` measures what NIO's event loop, channel pipeline and buffers cost under a delivery before
// any HTTP, routing, JSON or relay logic (the Python relay measures the kernel's part alone).
//
//     relay-floor-nio [--threads 1]
//
// Listens on 127.0.0.1 (a free port), prints `READY <port>`, then for each connection reads its hello line
// (`S <device>`, `P`, `A` or `C`). Once `relay-floor.py`'s driver has connected everything it says `+` to each, then per
// delivery: reads a 600-byte provider request (the device's number in its first 8 bytes), answers it with 130 bytes on
// the same connection and writes a 330-byte event on the device's stream connection; reads each 250-byte ack and answers
// it with 60 bytes. Any bytes on the control connection end the process. Message sizes are the real relay's.
import Foundation
import NIOCore
import NIOPosix
import Synchronization

let providerRequest = 600
let ackRequest = 250
let threads = CommandLine.arguments.firstIndex(of: "--threads").map { Int(CommandLine.arguments[$0 + 1]) ?? 1 } ?? 1

/// The connections by role, shared by every connection's handler (on one or more event loops).
final class Registry: Sendable {
    private struct State {
        var streams: [Int: any Channel] = [:]
        var all: [any Channel] = []
    }

    private let state = Mutex(State())
    /// How many connections the driver opens: `--devices` streams (default 500), 8 provider, 8 ack and 1 control.
    private let expected: Int

    init(expected: Int) {
        self.expected = expected
    }

    /// Registers a connection; once everyone is connected, says `+` to each.
    func add(_ channel: any Channel, device: Int?) {
        let everyone = state.withLock { s -> [any Channel] in
            if let device { s.streams[device] = channel }
            s.all.append(channel)
            return s.all.count == expected ? s.all : []
        }
        for each in everyone { each.writeAndFlush(ByteBuffer(string: "+"), promise: nil) }
    }

    func stream(_ device: Int) -> (any Channel)? {
        state.withLock { $0.streams[device] }
    }
}

let devices = CommandLine.arguments.firstIndex(of: "--devices").map { Int(CommandLine.arguments[$0 + 1]) ?? 500 } ?? 500
let registry = Registry(expected: devices + 8 + 8 + 1)

final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Role { case unknown, stream, provider, ack, control }

    private var role = Role.unknown
    private var pending = ByteBuffer()
    private let providerAnswer = ByteBuffer(repeating: UInt8(ascii: "p"), count: 130)
    private let event = ByteBuffer(repeating: UInt8(ascii: "e"), count: 330)
    private let ackAnswer = ByteBuffer(repeating: UInt8(ascii: "a"), count: 60)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        switch role {
        case .stream:
            return
        case .control:
            exit(0)
        case .unknown:
            pending.writeBuffer(&incoming)
            guard let end = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else { return }
            let line = pending.readString(length: end - pending.readerIndex)!
            pending.moveReaderIndex(forwardBy: 1)
            let words = line.split(separator: " ")
            switch words.first {
            case "S": role = .stream
            case "P": role = .provider
            case "A": role = .ack
            default: role = .control
            }
            registry.add(context.channel, device: role == .stream ? Int(words[1]) : nil)
        case .provider, .ack:
            if pending.readableBytes == 0 {
                swap(&pending, &incoming)
            } else {
                pending.writeBuffer(&incoming)
            }
        }
        if role == .provider {
            while pending.readableBytes >= providerRequest {
                let device = Int(pending.readString(length: 8)!)!
                pending.moveReaderIndex(forwardBy: providerRequest - 8)
                context.writeAndFlush(wrapOutboundOut(providerAnswer), promise: nil)
                registry.stream(device)?.writeAndFlush(event, promise: nil)
            }
        } else if role == .ack {
            while pending.readableBytes >= ackRequest {
                pending.moveReaderIndex(forwardBy: ackRequest)
                context.writeAndFlush(wrapOutboundOut(ackAnswer), promise: nil)
            }
        }
        if pending.readableBytes == 0 { pending.clear() }
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FloorHandler()) }
    }
let server = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
FileHandle.standardOutput.write(Data("READY \(server.localAddress!.port!)\n".utf8))
try server.closeFuture.wait()
