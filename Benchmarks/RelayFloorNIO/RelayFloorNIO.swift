// The relay's socket work alone, on SwiftNIO (issue 36): the relay side of `relay-floor.py`'s protocol, so that
// `relay-floor.py --relay nio` measures what NIO's event loop, channel pipeline and buffers cost under a delivery before
// any HTTP, routing, JSON or relay logic (the Python relay measures the kernel's part alone); and its driver side, so
// that `relay-floor.py --driver nio` measures the same for `survey-cli load push`'s socket work.
//
//     relay-floor-nio [--threads 1] [--devices 500]
//     relay-floor-nio --driver <port> [--devices 500] [--rate 2000] [--seconds 10]
//
// As the relay: listens on 127.0.0.1 (a free port), prints `READY <port>`, then for each connection reads its hello line
// (`S <device>`, `P`, `A` or `C`). Once `relay-floor.py`'s driver has connected everything it says `+` to each, then per
// delivery: reads a 600-byte provider request (the device's number in its first 8 bytes), answers it with 130 bytes on
// the same connection and writes a 330-byte event on the device's stream connection; reads each 250-byte ack and answers
// it with 60 bytes. Any bytes on the control connection end the process. Message sizes are the real relay's.
//
// As the driver (one event loop, as `survey-cli load push` runs under `taskset -c 1`): connects the devices' streams, 8
// provider and 8 ack connections and the control connection to a relay of this protocol at `<port>`, prints `GO` once
// the relay said `+` to every one, then paces provider requests at `--rate` on the loop's timer (a scheduled task at each
// send's time, as the load engine paces), acks every event on an ack connection and reads every answer; after
// `--seconds` it prints `DONE <sent> <events>` and stops the relay through the control connection.
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

/// The driver side: one loop, every connection's handler and the pacing on it (held in `NIOLoopBound`s elsewhere).
final class FloorDriver {
    let loop: any EventLoop
    let rate: Double
    /// `--tick-us`: the pacing timer's granularity (0: a wake-up at each send's own time, as the load engine paces).
    var granularity = TimeAmount.zero
    var streams: [any Channel] = []
    var providers: [any Channel] = []
    var acks: [any Channel] = []
    var control: (any Channel)?
    var sent = 0
    var events = 0
    var greeted = 0
    var start = NIODeadline.now()
    let padding = ByteBuffer(repeating: UInt8(ascii: "x"), count: providerRequest - 8)
    let ack = ByteBuffer(repeating: UInt8(ascii: "k"), count: ackRequest)
    var onReady: (() -> Void)?

    init(loop: any EventLoop, rate: Double) {
        self.loop = loop
        self.rate = rate
    }

    /// Connections that must hear the relay's `+` before the run starts: the streams, 8 provider, 8 ack and the control
    /// one (fixed up front: the `+`s may arrive before the connections are all handed to the driver).
    let expected = devices + 8 + 8 + 1

    /// Sends every request due by now, then sleeps on the loop's timer until the next one is due.
    func tick() {
        let now = NIODeadline.now()
        var due = start + .nanoseconds(Int64(Double(sent) / rate * 1e9))
        while due <= now {
            var request = ByteBuffer(string: String(format: "%08d", sent % streams.count))
            request.writeImmutableBuffer(padding)
            providers[sent % providers.count].writeAndFlush(request, promise: nil)
            sent += 1
            due = start + .nanoseconds(Int64(Double(sent) / rate * 1e9))
        }
        // With a tick, every send due within it waits for the tick's end (a coarser timer: fewer wake-ups, later sends).
        let next = granularity > .zero ? max(due, now + granularity) : due
        loop.assumeIsolated().scheduleTask(deadline: next) { self.tick() }
    }

    /// One stream's whole 330-byte events are acked, each on an ack connection in turn.
    func received(events count: Int) {
        for _ in 0..<count {
            acks[events % acks.count].writeAndFlush(ack, promise: nil)
            events += 1
        }
    }
}

final class DriverHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let driver: FloorDriver
    let isStream: Bool
    private var greeted = false
    private var pending = 0

    init(driver: FloorDriver, isStream: Bool) {
        self.driver = driver
        self.isStream = isStream
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var count = unwrapInboundIn(data).readableBytes
        if !greeted {
            greeted = true
            count -= 1
            driver.greeted += 1
            if driver.greeted == driver.expected { driver.onReady?() }
        }
        guard isStream else { return }
        pending += count
        let whole = pending / 330
        pending -= whole * 330
        if whole > 0 { driver.received(events: whole) }
    }
}

func runDriver(port: Int) throws -> Never {
    func option(_ name: String, _ fallback: Double) -> Double {
        CommandLine.arguments.firstIndex(of: name).flatMap { Double(CommandLine.arguments[$0 + 1]) } ?? fallback
    }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let rate = option("--rate", 2000)
    let tick = TimeAmount.microseconds(Int64(option("--tick-us", 0)))
    let bound = try loop.submit {
        let driver = FloorDriver(loop: loop, rate: rate)
        driver.granularity = tick
        return NIOLoopBound(driver, eventLoop: loop)
    }.wait()
    let seconds = option("--seconds", 10)
    func connect(_ hello: String, stream: Bool) throws -> any Channel {
        let channel = try ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DriverHandler(driver: bound.value, isStream: stream))
                }
            }
            .connect(host: "127.0.0.1", port: port).wait()
        try channel.writeAndFlush(ByteBuffer(string: hello)).wait()
        return channel
    }
    let ready = loop.makePromise(of: Void.self)
    try loop.submit { bound.value.onReady = { ready.succeed() } }.wait()
    let streams = try (0..<devices).map { try connect("S \($0)\n", stream: true) }
    let providers = try (0..<8).map { _ in try connect("P\n", stream: false) }
    let acks = try (0..<8).map { _ in try connect("A\n", stream: false) }
    let control = try connect("C\n", stream: false)
    try loop.submit {
        let driver = bound.value
        driver.streams = streams
        driver.providers = providers
        driver.acks = acks
        driver.control = control
    }.wait()
    try ready.futureResult.wait()
    FileHandle.standardOutput.write(Data("GO\n".utf8))
    try loop.submit {
        bound.value.start = .now()
        bound.value.tick()
    }.wait()
    Thread.sleep(forTimeInterval: seconds)
    let (sent, events) = try loop.submit { (bound.value.sent, bound.value.events) }.wait()
    FileHandle.standardOutput.write(Data("DONE \(sent) \(events)\n".utf8))
    _ = try? control.writeAndFlush(ByteBuffer(string: "stop\n")).wait()
    exit(0)
}

if let flag = CommandLine.arguments.firstIndex(of: "--driver") {
    try runDriver(port: Int(CommandLine.arguments[flag + 1])!)
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
