import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP2
import SurveyWire

/// One connection's ``HTTPConnectionStateMachine`` and the I/O it asks for: the timer, raw writes past the HTTP
/// encoder (refusals, `100 Continue`), reads held back and closing. Lives on the connection's event loop; the front
/// handler (``HTTPConnectionHandler``, or ``HTTP2StreamFrontHandler`` on an HTTP/2 stream) and the request handler
/// behind the decoder both feed it events.
///
/// An HTTP/2 stream is one of these too: one request, read whole within the request timeout, answered, then the
/// stream ends; its raw writes are HTTP/2 frames instead of HTTP/1 bytes.
final class HTTPConnection {
    /// What the raw writes are made of.
    enum Wire {
        /// HTTP/1 bytes, written past the encoder.
        case http1
        /// HTTP/2 frames on one stream (a refusal ends the stream, not the connection).
        case http2Stream
    }

    let wire: Wire
    /// Connections open in this process (a graceful stop waits for 0).
    static let open = ObservedValue(0)

    private(set) var machine: HTTPConnectionStateMachine
    private let serverName: String
    /// The front handler's context: raw writes go from there, past the HTTP encoder.
    private var front: ChannelHandlerContext?
    /// The one timer of this connection, and when it fires. It is moved only when a deadline comes before it; otherwise
    /// it fires, finds the deadline later, and waits again: a keep-alive connection's requests schedule no timers.
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?
    /// The task making the current answer (cancelled if the connection closes before it is written).
    var answerTask: Task<Void, Never>?

    init(limits: ConnectionLimits, serverName: String, now: NIODeadline, wire: Wire = .http1) {
        machine = HTTPConnectionStateMachine(limits: limits, now: now)
        self.serverName = serverName
        self.wire = wire
    }

    /// The current time on the connection's loop.
    var now: NIODeadline { front?.eventLoop.now ?? .now() }

    /// Applies an event and keeps the timer in step; returns what the event returned (an action is not performed).
    func event<Result>(_ body: (inout HTTPConnectionStateMachine) -> Result) -> Result {
        let result = body(&machine)
        syncTimer()
        return result
    }

    /// Applies an event and performs its action; returns the action (``HTTPConnectionStateMachine/Action/dispatch``
    /// is the caller's to act on).
    @discardableResult
    func handle(_ body: (inout HTTPConnectionStateMachine) -> HTTPConnectionStateMachine.Action) -> HTTPConnectionStateMachine.Action {
        let action = event(body)
        perform(action)
        return action
    }

    /// Does what an action asks, except dispatching a request (the request handler's).
    func perform(_ action: HTTPConnectionStateMachine.Action) {
        switch action {
        case .none, .dispatch:
            break
        case .read:
            front?.read()
        case .sendContinue:
            switch wire {
            case .http1: writeRaw("HTTP/1.1 100 Continue\r\n\r\n", thenClose: false)
            case .http2Stream: writeFrames([.headers(.init(headers: [":status": "100"]))], thenClose: false)
            }
        case .refuse(let refusal):
            let body = (try? WireJSON.encodeString(ErrorBody(code: refusal.code, message: refusal.message))) ?? "{}"
            switch wire {
            case .http1:
                let text = "HTTP/1.1 \(refusal.status.code) \(refusal.status.reasonPhrase)\r\nserver: \(serverName)\r\n"
                    + "content-type: application/json\r\ncontent-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n" + body
                writeRaw(text, thenClose: true)
            case .http2Stream:
                let headers: HPACKHeaders = [":status": String(refusal.status.code), "server": serverName,
                                             "content-type": "application/json", "content-length": String(body.utf8.count)]
                let bytes = front.map { $0.channel.allocator.buffer(string: body) } ?? ByteBuffer(string: body)
                writeFrames([.headers(.init(headers: headers)), .data(.init(data: .byteBuffer(bytes), endStream: true))], thenClose: true)
            }
        case .close:
            front?.close(promise: nil)
        case .cancelAnswer:
            answerTask?.cancel()
            answerTask = nil
        }
    }

    /// HTTP/2 frames on the stream, from its front (past the HTTP/1 codec); closing afterwards resets what is left of
    /// the stream, never the connection.
    private func writeFrames(_ frames: [HTTP2Frame.FramePayload], thenClose: Bool) {
        guard let context = front else { return }
        for frame in frames.dropLast() { context.write(NIOAny(frame), promise: nil) }
        guard let last = frames.last else { return }
        let written = context.writeAndFlush(NIOAny(last))
        let channel = context.channel
        if thenClose { written.whenComplete { _ in channel.close(promise: nil) } }
    }

    private func writeRaw(_ text: String, thenClose: Bool) {
        guard let context = front else { return }
        let written = context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text)))
        let channel = context.channel
        if thenClose { written.whenComplete { _ in channel.close(promise: nil) } }
    }

    // MARK: Lifecycle (from the front handler)

    func started(_ context: ChannelHandlerContext) {
        guard front == nil else { return }
        front = context
        Self.open.update { $0 += 1 }
        syncTimer()
    }

    func closed() {
        if front != nil { Self.open.update { $0 -= 1 } }
        perform(event { $0.closed() })
        timer?.cancel()
        timer = nil
        timerAt = nil
    }

    // MARK: Timer

    /// Makes the timer fire no later than the current deadline (and drops it when the connection can have none again).
    private func syncTimer() {
        guard let front else { return }
        guard let (dueAt, _) = machine.deadline else {
            if machine.phase != .open {
                timer?.cancel()
                timer = nil
                timerAt = nil
            }
            return
        }
        if let timerAt, timerAt <= dueAt { return }
        timer?.cancel()
        timerAt = dueAt
        let connection = NIOLoopBound(self, eventLoop: front.eventLoop)
        timer = front.eventLoop.scheduleTask(deadline: dueAt) { connection.value.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerAt = nil
        handle { [now] in $0.timerFired(now: now) }
    }
}

/// At the front of a connection's pipeline (next to the socket): feeds the connection the bytes read (before the
/// decoder), its writability and the channel's lifecycle; holds reads back while the client takes no output; and
/// starts a graceful stop when the server quiesces.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long a request being read when the server stops may take to arrive before the connection closes.
    static let drainGrace = TimeAmount.milliseconds(500)

    let connection: HTTPConnection

    init(_ connection: HTTPConnection) { self.connection = connection }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { connection.started(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        connection.started(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        connection.event { [now = context.eventLoop.now] in $0.bytesRead(bytes, now: now) }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        connection.event { $0.readComplete() }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if connection.event({ $0.readRequested() }) == .read { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        connection.handle { [now = context.eventLoop.now] in $0.writabilityChanged(writable, now: now) }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            let now = context.eventLoop.now
            connection.handle { $0.quiesce(now: now, drainBy: now + Self.drainGrace) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.closed()
        context.fireChannelInactive()
    }
}
