import NIOCore

/// First in a connection's pipeline while its protocol is unknown: holds the first bytes until they show HTTP/2's
/// connection preface (`PRI * HTTP/2.0...`: HTTP/2 with prior knowledge, h2c) or not, has `configure` add the
/// protocol's handlers behind it, then leaves, passing the bytes on. A connection that sends nothing for the idle
/// timeout is closed, as an idle HTTP/1 connection is, and so is one still silent when the server stops.
package final class HTTP2PrefaceDetector: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer

    package static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private let idleTimeout: TimeAmount
    private let configure: (ChannelHandlerContext, _ isHTTP2: Bool) throws -> Void
    private var held: ByteBuffer?
    private var timer: Scheduled<Void>?

    /// - Parameter configure: adds the protocol's handlers (behind this one) once the first bytes tell which.
    package init(idleTimeout: TimeAmount, configure: @escaping (ChannelHandlerContext, _ isHTTP2: Bool) throws -> Void) {
        self.idleTimeout = idleTimeout
        self.configure = configure
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if held == nil { held = bytes } else { held!.writeBuffer(&bytes) }
        let view = held!.readableBytesView
        let count = min(view.count, Self.preface.count)
        if !view.prefix(count).elementsEqual(Self.preface.prefix(count)) {
            decide(context, isHTTP2: false)
        } else if count == Self.preface.count {
            decide(context, isHTTP2: true)
        }
    }

    private func decide(_ context: ChannelHandlerContext, isHTTP2: Bool) {
        timer?.cancel()
        timer = nil
        do {
            try configure(context, isHTTP2)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        } catch {
            context.close(promise: nil)
        }
    }

    /// A server stopping gracefully closes a connection that has sent nothing yet (no request can be under way), and so
    /// does a client that ends its side before deciding (no handler behind this one would notice it).
    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        // The protocol's handlers are behind this one now: they get the bytes held, then the channel's reads.
        if let held, held.readableBytes > 0 {
            self.held = nil
            context.fireChannelRead(NIOAny(held))
            context.fireChannelReadComplete()
        }
    }
}
