import NIOCore
import NIOHTTP2

/// An HTTP/2 connection's ``HTTP2ConnectionStateMachine`` and its I/O: the one timer, GOAWAY and closing. Sits behind
/// NIO's `NIOHTTP2Handler` (its frames go out through it); the handler's stream delegate (``streamDelegate``) tells it
/// of streams opening and closing.
final class HTTP2ConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// How long open streams get to be answered once the server stops or the client's side ends.
    static let drainGrace = TimeAmount.milliseconds(500)

    private var machine: HTTP2ConnectionStateMachine
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?

    init(limits: ConnectionLimits, now: NIODeadline) {
        machine = HTTP2ConnectionStateMachine(limits: limits, now: now)
    }

    /// The delegate to give `NIOHTTP2Handler`, on the same event loop.
    func streamDelegate(eventLoop: any EventLoop) -> StreamDelegate {
        StreamDelegate(handler: NIOLoopBound(self, eventLoop: eventLoop))
    }

    /// Feeds stream lifecycle events to the handler (NIO calls it on the connection's event loop).
    struct StreamDelegate: NIOHTTP2StreamDelegate {
        let handler: NIOLoopBound<HTTP2ConnectionHandler>

        func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
            handler.value.machine.streamOpened(Int(id))
            handler.value.syncTimer()
        }

        func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
            let handler = handler.value
            // Deferred a tick: the stream's last frame is written but not yet flushed when this is called.
            let now = channel.eventLoop.now
            handler.perform(handler.machine.streamClosed(now: now), deferClose: true)
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        syncTimer()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
        self.context = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let now = context.eventLoop.now
        if event is ChannelShouldQuiesceEvent {
            perform(machine.quiesce(drainBy: now + Self.drainGrace))
            return
        }
        if let event = event as? ChannelEvent, event == .inputClosed {
            perform(machine.inputClosed(drainBy: now + Self.drainGrace))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine.closed()
        cancelTimer()
        context.fireChannelInactive()
    }

    private func perform(_ action: HTTP2ConnectionStateMachine.Action, deferClose: Bool = false) {
        defer { syncTimer() }
        guard let context else { return }
        switch action {
        case .none:
            return
        case .goAway(let last):
            context.writeAndFlush(wrapOutboundOut(Self.goAway(last)), promise: nil)
        case .goAwayAndClose(let last):
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(Self.goAway(last))).whenComplete { _ in channel.close(promise: nil) }
        case .close:
            let channel = context.channel
            if deferClose { context.eventLoop.execute { channel.close(promise: nil) } } else { channel.close(promise: nil) }
        }
    }

    private static func goAway(_ last: Int) -> HTTP2Frame {
        HTTP2Frame(streamID: .rootStream,
                   payload: .goAway(lastStreamID: HTTP2StreamID(Int32(clamping: last)), errorCode: .noError, opaqueData: nil))
    }

    private func syncTimer() {
        guard let context else { return }
        guard let (dueAt, _) = machine.deadline else {
            cancelTimer()
            return
        }
        if let timerAt, timerAt <= dueAt { return }
        timer?.cancel()
        timerAt = dueAt
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: dueAt) { handler.value.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerAt = nil
        guard let context else { return }
        perform(machine.timerFired(now: context.eventLoop.now))
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerAt = nil
    }
}
