import NIOCore
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
