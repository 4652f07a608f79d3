import NIOCore

/// First in a connection's pipeline while its protocol is unknown: holds the first bytes until they show HTTP/2's
/// connection preface (`PRI * HTTP/2.0...`: HTTP/2 with prior knowledge, h2c) or not, has `configure` add the
/// protocol's handlers behind it, then leaves, passing the bytes on. A connection that sends nothing for the idle
/// timeout is closed, as an idle HTTP/1 connection is.
final class HTTP2PrefaceDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private let idleTimeout: TimeAmount
    private let configure: (ChannelHandlerContext, _ isHTTP2: Bool) throws -> Void
    private var held: ByteBuffer?
    private var timer: Scheduled<Void>?

    init(idleTimeout: TimeAmount, configure: @escaping (ChannelHandlerContext, _ isHTTP2: Bool) throws -> Void) {
        self.idleTimeout = idleTimeout
        self.configure = configure
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The protocol's handlers are behind this one now: they get the bytes held, then the channel's reads.
        if let held, held.readableBytes > 0 {
            self.held = nil
            context.fireChannelRead(NIOAny(held))
            context.fireChannelReadComplete()
        }
    }
}
