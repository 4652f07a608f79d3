import NIOCore
import NIOSSL
import SurveyWire

/// The front of a proxy connection (PROTOCOL.md §9, "Proxy mode"): reads the client's first request head, which must
/// be `CONNECT host:port`; for a host and port `decide` answers with a TLS context, it answers `200 Connection
/// established`, leaves, and the connection becomes one of the channel's TLS connections (``BufferedHTTPChannel``'s
/// one front door: the same handler, guard, journal, deadlines and limits). Any other request, host or port is refused
/// (403 with a JSON body, or 405 for another method) and the connection closes: nothing is ever forwarded. A head not
/// read whole within the idle timeout, or over 8 KiB, closes the connection too.
final class ConnectTunnel: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    static let maxHead = 8 << 10

    private let decide: @Sendable (_ host: String, _ port: Int) -> NIOSSLContext?
    private let tunnel: (any Channel, NIOSSLContext) throws -> Void
    private let idleTimeout: TimeAmount
    private var held: ByteBuffer?
    private var timer: Scheduled<Void>?
    private var done = false

    /// - Parameters:
    ///   - decide: the TLS context for a host and port the proxy answers for, or nil to refuse it.
    ///   - tunnel: adds the TLS connection's handlers behind this one.
    init(idleTimeout: TimeAmount, decide: @escaping @Sendable (String, Int) -> NIOSSLContext?,
         tunnel: @escaping (any Channel, NIOSSLContext) throws -> Void) {
        self.idleTimeout = idleTimeout
        self.decide = decide
        self.tunnel = tunnel
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var bytes = unwrapInboundIn(data)
        if held == nil { held = bytes } else { held!.writeBuffer(&bytes) }
        let view = held!.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if view.count > Self.maxHead { refuse(context, 431, "header_fields_too_large", "the CONNECT request is over 8 KiB") }
            return
        }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let rest = held!.getSlice(at: end.upperBound, length: view.endIndex - end.upperBound)
        held = nil
        let line = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else {
            return refuse(context, 400, "bad_request", "the proxy takes CONNECT host:port HTTP/1.1")
        }
        guard parts[0] == "CONNECT" else {
            return refuse(context, 405, "method_not_allowed", "this proxy only tunnels (CONNECT) to the push providers' hosts; it forwards nothing")
        }
        let target = String(parts[1])
        guard let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]) else {
            return refuse(context, 400, "bad_request", "CONNECT needs host:port")
        }
        let host = String(target[..<colon]).lowercased()
        guard let tls = decide(host, port) else {
            return refuse(context, 403, "proxy_host_refused",
                          "\(LogText.clip(host, 100)):\(port) is not a push provider this relay stands in for; nothing is forwarded")
        }
        done = true
        timer?.cancel()
        timer = nil
        let reply = context.channel.allocator.buffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")
        context.writeAndFlush(NIOAny(reply), promise: nil)
        do {
            try tunnel(context.channel, tls)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            // What the client sent after its CONNECT (its TLS hello, when it did not wait) goes to the TLS handler.
            if let rest, rest.readableBytes > 0 {
                context.fireChannelRead(NIOAny(rest))
                context.fireChannelReadComplete()
            }
        } catch {
            context.close(promise: nil)
        }
    }

    private func refuse(_ context: ChannelHandlerContext, _ status: Int, _ code: String, _ message: String) {
        done = true
        timer?.cancel()
        timer = nil
        let body = (try? WireJSON.encodeString(ErrorBody(code: code, message: message))) ?? "{}"
        let reason = [400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 431: "Request Header Fields Too Large"][status] ?? "Error"
        let text = "HTTP/1.1 \(status) \(reason)\r\ncontent-type: application/json\r\ncontent-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text))).whenComplete { _ in channel.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !done, event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }
}
