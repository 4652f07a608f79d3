import NIOCore
import NIOHPACK
import NIOHTTP2

/// At the front of an HTTP/2 stream's pipeline (next to the multiplexer): what ``HTTPConnectionHandler`` is to an
/// HTTP/1 connection. It starts the stream's ``HTTPConnection`` (so the stream has the request deadline: a request
/// not read whole within `--request-timeout` of the stream's start is answered 408 and the stream ends), feeds it the
/// stream's writability (flow control) and lifecycle, and holds reads back while the client takes no output.
final class HTTP2StreamFrontHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let connection: HTTPConnection

    init(_ connection: HTTPConnection) { self.connection = connection }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { connection.started(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        connection.started(context)
        context.fireChannelActive()
    }

    /// A request's HEADERS without `:authority` (HTTP/2 allows it; aioapns sends none) gets the address the client
    /// connected to: NIO's HTTP/1 codec behind this handler refuses a request without one, and the request's `Host` is
    /// then what the connection itself says. A browser always sends `:authority`, so the control plane's `Host` check
    /// (DNS rebinding) is not weakened.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .headers(var headers) = unwrapInboundIn(data), headers.headers.first(name: ":method") != nil,
              headers.headers.first(name: ":authority") == nil else {
            context.fireChannelRead(data)
            return
        }
        let address = context.channel.parent?.localAddress ?? context.channel.localAddress
        let host = address.map { address in
            let ip = address.ipAddress ?? "127.0.0.1"
            let port = address.port.map { ":\($0)" } ?? ""
            return (ip.contains(":") ? "[\(ip)]" : ip) + port
        } ?? "127.0.0.1"
        var fields = HPACKHeaders()
        fields.reserveCapacity(headers.headers.count + 1)
        var added = false
        for field in headers.headers {
            // Pseudo-headers come first: `:authority` goes among them.
            if !added && !field.name.hasPrefix(":") {
                fields.add(name: ":authority", value: host)
                added = true
            }
            fields.add(name: field.name, value: field.value, indexing: field.indexable)
        }
        if !added { fields.add(name: ":authority", value: host) }
        headers.headers = fields
        context.fireChannelRead(wrapInboundOut(.headers(headers)))
    }

    func read(context: ChannelHandlerContext) {
        if connection.event({ $0.readRequested() }) == .read { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        connection.handle { [now = context.eventLoop.now] in $0.writabilityChanged(writable, now: now) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.closed()
        context.fireChannelInactive()
    }
}
