import HTTPTypes
import NIOCore
import NIOHTTP1
import SurveyWire

/// Connection timeouts and the pipelining cap, the same on both servers (defaults in docs/DECISIONS.md, "Limits").
public struct ConnectionLimits: Sendable, Equatable {
    /// A connection with no request under way (just connected, or kept alive after a response) is closed after this.
    public var idleTimeout: TimeAmount
    /// A request must be read whole, headers and body, within this long of its first byte: else 408 and close.
    /// (A client that trickles its headers a byte at a time holds a connection this long at most.)
    public var requestTimeout: TimeAmount
    /// Requests read but not yet answered on one connection; a client pipelining more without reading is disconnected.
    public var maxPipelined: Int

    public init(idleTimeout: TimeAmount = .seconds(60), requestTimeout: TimeAmount = .seconds(10), maxPipelined: Int = 32) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maxPipelined = maxPipelined
    }

    /// From command-line values in seconds (checked by ``validate(idleTimeout:requestTimeout:maxPipelined:)``).
    public init(seconds idle: Double, _ request: Double, maxPipelined: Int) {
        self.init(idleTimeout: .milliseconds(Int64(idle * 1000)), requestTimeout: .milliseconds(Int64(request * 1000)), maxPipelined: maxPipelined)
    }

    /// The ranges the servers' `--idle-timeout`, `--request-timeout` and `--max-pipelined` accept.
    public static func validate(idleTimeout: Double, requestTimeout: Double, maxPipelined: Int) throws(LimitError) {
        guard idleTimeout >= 0.1, idleTimeout <= 86_400 else { throw LimitError("--idle-timeout must be 0.1-86400 seconds") }
        guard requestTimeout >= 0.1, requestTimeout <= 3_600 else { throw LimitError("--request-timeout must be 0.1-3600 seconds") }
        guard (1...1_000).contains(maxPipelined) else { throw LimitError("--max-pipelined must be 1-1000") }
    }

    /// A command-line value out of range.
    public struct LimitError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}

/// One connection's deadlines and requests in flight. Lives on the connection's event loop: its handlers call it from
/// there (the raw-bytes handler at the front of the pipeline, the HTTP-parts handler behind the decoder).
///
/// A connection is `idle` (no byte of a request yet: the idle deadline runs), `reading` (a request's first byte came:
/// the request deadline runs), `busy` (requests read, answers not all written: no deadline, the server is working),
/// or `streaming` (an event stream: no deadline ever, the relay's keepalives and the client's own timer watch it).
public final class ConnectionHygiene {
    enum Phase { case idle, reading, busy, streaming, closed }

    let limits: ConnectionLimits
    private(set) var phase = Phase.idle
    private(set) var inFlight = 0
    /// Whether the current request's first line has ended (tells 414, a target too long, from 431).
    private var requestLineEnded = false
    /// The current phase's deadline (idle or reading), if it has one.
    private var dueAt: NIODeadline?
    /// The one timer of this connection, and when it fires. It is moved only when a deadline comes before it; otherwise
    /// it fires, finds the deadline later, and waits again: a keep-alive connection's requests schedule no timers.
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?
    /// The front handler's context: refusals are written from there as raw bytes, past the HTTP encoder.
    fileprivate var front: ChannelHandlerContext?
    private let serverName: String

    public init(limits: ConnectionLimits, serverName: String) {
        self.limits = limits
        self.serverName = serverName
    }

    // MARK: Events

    fileprivate func started(_ context: ChannelHandlerContext) {
        front = context
        enter(.idle)
    }

    fileprivate func bytesRead(_ bytes: ByteBuffer) {
        if phase == .idle { enter(.reading) }
        if !requestLineEnded, bytes.readableBytesView.contains(UInt8(ascii: "\n")) { requestLineEnded = true }
    }

    func requestHead() {
        requestLineEnded = true
        inFlight += 1
        if inFlight > limits.maxPipelined {
            // No answer can be written out of order; the client is not reading what it asked for.
            close()
        }
    }

    func requestEnd() {
        if phase == .reading || phase == .idle { enter(.busy) }
    }

    func responseEnd() {
        inFlight = max(0, inFlight - 1)
        if inFlight == 0, phase == .busy { enter(.idle) }
    }

    /// The connection now carries an event stream: no deadlines from here on.
    public func streamOpened() { enter(.streaming) }

    fileprivate func closed() {
        phase = .closed
        dueAt = nil
        cancelTimer()
    }

    // MARK: Deadlines

    private func enter(_ next: Phase) {
        guard phase != .closed else { return }
        phase = next
        switch next {
        case .idle:
            requestLineEnded = false
            dueAt = .now() + limits.idleTimeout
        case .reading:
            dueAt = .now() + limits.requestTimeout
        case .busy, .closed:
            dueAt = nil
        case .streaming:
            // For good: no timer stays pending for a stream (thousands of them would sit in the event loops' heaps).
            dueAt = nil
            cancelTimer()
        }
        arm()
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerAt = nil
    }

    /// Makes the timer fire no later than the current deadline.
    private func arm() {
        guard let dueAt, let front else { return }
        if let timerAt, timerAt <= dueAt { return }
        timer?.cancel()
        timerAt = dueAt
        timer = front.eventLoop.scheduleTask(deadline: dueAt) { [weak self] in self?.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerAt = nil
        guard let dueAt else { return }
        guard NIODeadline.now() >= dueAt else {
            arm()
            return
        }
        // A deadline is set only while idle or reading, so the phase says which one passed.
        switch phase {
        case .idle:
            close()
        case .reading:
            let seconds = limits.requestTimeout.nanoseconds / 1_000_000_000
            refuse(status: .requestTimeout, code: "request_timeout", "the request was not read whole within \(seconds) s")
        case .busy, .streaming, .closed:
            break
        }
    }

    func close() {
        guard phase != .closed else { return }
        let context = front
        closed()
        context?.close(promise: nil)
    }

    /// Writes a JSON refusal straight to the socket (no response is under way when this is called), then closes.
    func refuse(status: HTTPResponse.Status, code: String, _ message: String) {
        guard let context = front, phase != .closed, inFlight == 0 else {
            close()
            return
        }
        let body = (try? WireJSON.encodeString(ErrorBody(code: code, message: message))) ?? "{}"
        let text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nserver: \(serverName)\r\ncontent-type: application/json\r\n"
            + "content-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n" + body
        closed()
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text))).whenComplete { _ in context.close(promise: nil) }
    }

    /// A request's head (`head`) or end was read.
    func requestPart(head: Bool) {
        if head { requestHead() } else { requestEnd() }
    }

    /// Answers an HTTP parse error (true); any other error is not this type's (false: pass it on).
    func answered(_ error: any Error) -> Bool {
        guard error is HTTPParserError else { return false }
        parseFailed(error)
        return true
    }

    /// A request NIO's parser refused: 414 for a target over the limit, 431 for headers, else 400; JSON each time.
    func parseFailed(_ error: any Error) {
        if let error = error as? HTTPParserError, error == .headerOverflow, !requestLineEnded {
            refuse(status: .uriTooLong, code: "uri_too_long", "the request target is too long")
        } else if let error = error as? HTTPParserError, error == .headerOverflow {
            refuse(status: .requestHeaderFieldsTooLarge, code: "header_fields_too_large", "the request line or headers are too large")
        } else {
            refuse(status: .badRequest, code: "bad_request", "the request is not valid HTTP/1.1")
        }
    }
}

/// At the front of a connection's pipeline: notes the first byte of each request and starts the deadlines.
public final class ConnectionTimerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    let hygiene: ConnectionHygiene

    public init(_ hygiene: ConnectionHygiene) { self.hygiene = hygiene }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { hygiene.started(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        hygiene.started(context)
        context.fireChannelActive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        hygiene.bytesRead(unwrapInboundIn(data))
        context.fireChannelRead(data)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        hygiene.closed()
        context.fireChannelInactive()
    }
}

/// Behind the HTTP decoder: counts requests in flight and turns parse errors into JSON refusals.
public final class RequestPartsHygieneHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias InboundOut = HTTPServerRequestPart
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = HTTPServerResponsePart

    let hygiene: ConnectionHygiene

    /// Counts for `hygiene`'s connection (swift-nio's HTTP/1 parts, as ``BufferedHTTPChannel`` carries them).
    public init(nio hygiene: ConnectionHygiene) {
        self.hygiene = hygiene
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: hygiene.requestPart(head: true)
        case .end: hygiene.requestPart(head: false)
        case .body: break
        }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { hygiene.responseEnd() }
        context.write(data, promise: promise)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !hygiene.answered(error) { context.fireErrorCaught(error) }
    }
}
