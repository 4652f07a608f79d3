import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHPACK
import NIOHTTP2
import NIOHTTPTypesHTTP1
import NIOSSL
import NIOTLS
import Synchronization
import SurveyWire
import Foundation

/// HTTP/1 connections served by NIO channel handlers, with each request read whole on its event loop before the
/// router sees it, instead of Hummingbird's connection task.
///
/// Hummingbird's HTTP/1 server keeps each connection in a task that iterates an async channel; a request's body is a
/// stream the route awaits part by part, and the response goes back through an async writer: several hops between
/// the event loop and Swift's cooperative pool per request. Here the pipeline is NIO's HTTP/1 codec and
/// ``BufferedHTTPHandler``: the head and body are collected on the event loop, the router answers in one task, and the
/// whole response is written back on the event loop. Every route's body is small enough to hold (the servers cap
/// them), and no route streams its response.
package struct BufferedHTTPChannel<Responder: HTTPResponder>: ServerChildChannel
where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    /// A set-up connection (Hummingbird's server keeps it until `handle` returns, which is at once).
    package struct Value: ServerChildChannelValue {
        /// The connection's channel.
        package let channel: any Channel
    }

    let responder: Responder
    let bodyCap: Int
    let serverName: String
    let logger: Logger
    let limits: ConnectionLimits
    let intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)?
    let onEventLoop: Bool
    let h2c: Bool
    let tls: NIOSSLContext?
    /// Proxy mode: the TLS context for a `CONNECT` target, or nil to refuse it (``ConnectTunnel``).
    let proxy: (@Sendable (String, Int) -> NIOSSLContext?)?

    /// The most streams one HTTP/2 connection may have open at once (its SETTINGS say so; more are refused by NIO):
    /// with each stream's body capped at `bodyCap`, a connection buffers at most this many bodies.
    package static var maxConcurrentStreams: Int { 100 }

    /// - Parameters:
    ///   - bodyCap: bytes of a request body kept; past it the rest is dropped (give one more than the routes' largest
    ///     limit, so they still see an over-long body and answer 413).
    ///   - intercept: sees each request first, on the event loop, and may take it (the relay's event streams).
    ///   - onEventLoop: run each request's task on its connection's event loop (``EventLoopTaskExecutor``) rather than
    ///     on Swift's cooperative pool; for routes that never block for long.
    ///   - h2c: also serve HTTP/2 with prior knowledge: a connection whose first bytes are HTTP/2's preface is
    ///     served by NIO's HTTP/2 handler, each stream by the same request handler as an HTTP/1 connection.
    ///   - tls: serve TLS first (APNs' transport): HTTP/2 when ALPN chose `h2`, HTTP/1.1 when it chose `http/1.1`,
    ///     and without ALPN whatever the first bytes say (aioapns offers none; Apple takes HTTP/2 from it). Every
    ///     protocol reaches the same request handler: one front door (canonical target, interceptors, guards in the
    ///     router, deadlines, limits) whatever the listener.
    package init(responder: Responder, bodyCap: Int, serverName: String, logger: Logger, limits: ConnectionLimits,
                intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)? = nil, onEventLoop: Bool = false, h2c: Bool = false,
                tls: NIOSSLContext? = nil, proxy: (@Sendable (String, Int) -> NIOSSLContext?)? = nil) {
        self.proxy = proxy
        self.onEventLoop = onEventLoop
        self.h2c = h2c
        self.tls = tls
        self.responder = responder
        self.bodyCap = bodyCap
        self.serverName = serverName
        self.logger = logger
        self.limits = limits
        self.intercept = intercept
    }

    /// Builds the connection's pipeline: the connection's front handler (deadlines, reads held back), NIO's HTTP/1
    /// codec, then the handler that reads requests whole, answers them in order and writes the answers.
    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            if let proxy {
                // A proxy connection: CONNECT first, then TLS with the context of the host it names.
                let setup = self
                try channel.pipeline.syncOperations.addHandler(ConnectTunnel(idleTimeout: limits.idleTimeout, decide: proxy) { channel, context in
                    try setup.configureTLS(channel, context: context, logger: logger)
                })
            } else if let tls {
                try configureTLS(channel, context: tls, logger: logger)
            } else if h2c {
                try addPrefaceDetector(channel, logger: logger)
            } else {
                try configureHTTP1(channel, logger: logger)
            }
            return Value(channel: channel)
        }
    }

    /// The first bytes decide; until then the detector holds them (and closes a silent connection).
    func addPrefaceDetector(_ channel: any Channel, logger: Logger) throws {
        let setup = self
        try channel.pipeline.syncOperations.addHandler(HTTP2PrefaceDetector(idleTimeout: limits.idleTimeout) { context, isHTTP2 in
            if isHTTP2 { try setup.configureHTTP2(channel, logger: logger) } else { try setup.configureHTTP1(channel, logger: logger) }
        })
    }

    /// ALPN chose a protocol the server never offered (a broken client): the connection closes.
    struct UnofferedProtocol: Error { let name: String }

    /// TLS, then the protocol ALPN chose (or, without ALPN, the one the first bytes show).
    func configureTLS(_ channel: any Channel, context: NIOSSLContext, logger: Logger) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(NIOSSLServerHandler(context: context))
        try pipeline.addHandler(TLSHandshakeDeadline(timeout: limits.idleTimeout))
        let setup = self
        try pipeline.addHandler(ApplicationProtocolNegotiationHandler { result, channel in
            channel.eventLoop.makeCompletedFuture {
                switch result {
                case .negotiated("h2"): try setup.configureHTTP2(channel, logger: logger)
                case .negotiated("http/1.1"): try setup.configureHTTP1(channel, logger: logger)
                case .fallback: try setup.addPrefaceDetector(channel, logger: logger)
                case .negotiated(let other): throw UnofferedProtocol(name: other)
                }
            }
        })
    }

    /// The HTTP/1 pipeline.
    func configureHTTP1(_ channel: any Channel, logger: Logger) throws {
        let pipeline = channel.pipeline.syncOperations
        let connection = HTTPConnection(limits: limits, serverName: serverName, now: channel.eventLoop.now)
        try pipeline.addHandler(HTTPConnectionHandler(connection))
        // No pipelining helper: the connection's state machine answers requests one at a time, in order, and keeps
        // reading meanwhile (so a client that leaves is noticed, and its request's work cancelled). Requests NIO
        // cannot parse are answered by the connection (JSON 400, 414 or 431, then close).
        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
        try pipeline.addHandler(requestHandler(channel, connection: connection, logger: logger))
    }

    /// The HTTP/2 pipeline: NIO's HTTP/2 handler, the connection's deadlines and graceful stop
    /// (``HTTP2ConnectionHandler``), and on each stream its front (the request deadline, ``HTTP2StreamFrontHandler``),
    /// the END_STREAM coalescer, the HTTP/1 parts codec and the request handler (one request per stream).
    func configureHTTP2(_ channel: any Channel, logger: Logger) throws {
        let setup = self
        let manager = HTTP2ConnectionHandler(limits: limits, now: channel.eventLoop.now)
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.maxConcurrentStreams),
                                      HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize)]
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: connection, streamConfiguration: .init(),
            streamDelegate: manager.streamDelegate(eventLoop: channel.eventLoop)) { stream in
                stream.eventLoop.makeCompletedFuture {
                    let connection = HTTPConnection(limits: setup.limits, serverName: setup.serverName, now: stream.eventLoop.now,
                                                    wire: .http2Stream)
                    let pipeline = stream.pipeline.syncOperations
                    try pipeline.addHandler(HTTP2StreamFrontHandler(connection))
                    try pipeline.addHandler(HTTP2EndStreamCoalescer())
                    try pipeline.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                    try pipeline.addHandler(setup.requestHandler(stream, connection: connection, logger: logger))
                }
            }
        try channel.pipeline.syncOperations.addHandler(manager)
    }

    private func requestHandler(_ channel: any Channel, connection: HTTPConnection, logger: Logger) -> BufferedHTTPHandler<Responder> {
        BufferedHTTPHandler(responder: responder, bodyCap: bodyCap, serverName: serverName, logger: logger, connection: connection,
                            intercept: intercept, executor: onEventLoop ? EventLoopTaskExecutor(channel.eventLoop) : nil)
    }

    /// Nothing to do: the connection is served by its pipeline, and this task ends at once.
    package func handle(value: Value, logger: Logger) async {}
}

/// A request read whole, as an interceptor sees it (on the connection's event loop).
package struct BufferedRequest: Sendable {
    /// The request line and headers.
    package let head: HTTPRequestHead
    /// The whole body (at most the channel's body cap).
    package let body: ByteBuffer
    /// The connection it came on.
    package let channel: any Channel
    let write: @Sendable (HTTPResponse, ByteBuffer, _ close: Bool) -> Void
    let startStream: @Sendable (_ closed: @escaping @Sendable () -> Void) -> Void

    /// The path of the request target, without its query string.
    package var path: Substring.UTF8View { BufferedRequest.path(head.uri) }

    /// The path of a request target, without its query string.
    package static func path(_ uri: String) -> Substring.UTF8View {
        let bytes = uri.utf8[...]
        return bytes.firstIndex(of: UInt8(ascii: "?")).map { bytes[..<$0] } ?? bytes
    }

    /// Writes a whole response and lets the next request in; `close` closes the connection after it (as does a request
    /// that asked for that). May be called from any thread.
    package func respond(_ response: HTTPResponse, _ body: ByteBuffer, close: Bool = false) {
        channel.eventLoop.runNowOrLater { [write] in write(response, body, close) }
    }

    /// Writes a router-style response (a refusal's `makeResponse()`), its body collected first.
    package func respond(_ response: Response, close: Bool = false) async {
        respond(response.head, await collectBody(response.body), close: close)
    }

    /// Hands the connection to a stream (the connection's deadlines stop): later reads are ignored, and `closed` is
    /// called once when the client leaves. Call on the event loop, before the interceptor returns.
    package func stream(closed: @escaping @Sendable () -> Void) {
        startStream(closed)
    }

    /// What an interceptor did with a request.
    package enum Outcome: Sendable {
        /// Not taken: the router answers it.
        case pass
        /// Taken: the interceptor answers it (through `respond`) or streams on the connection.
        case taken
    }
}

/// One connection's requests, read whole and answered one at a time, in order. Runs on the connection's event loop;
/// what to do when is the connection's state machine's (``HTTPConnectionStateMachine``), the bytes are this handler's.
final class BufferedHTTPHandler<Responder: HTTPResponder>: ChannelInboundHandler, RemovableChannelHandler
where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// A request read whole, waiting for its turn.
    private struct ReadRequest {
        var head: HTTPRequestHead
        var body: ByteBuffer
    }

    /// What the answer being made needs to know of its request.
    private struct Answering {
        var keepAlive: Bool
        var version: HTTPVersion
        var isHead: Bool
    }

    private let responder: Responder
    private let bodyCap: Int
    private let serverName: String
    private let logger: Logger
    private let connection: HTTPConnection
    private let intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)?
    /// Where request tasks run: the connection's event loop, or (nil) Swift's cooperative pool.
    private let executor: EventLoopTaskExecutor?
    /// The request being read: its head and body so far (at most `bodyCap` bytes).
    private var reading: ReadRequest?
    /// Requests read whole while an earlier one is answered.
    private var waiting = CircularBuffer<ReadRequest>()
    /// The request being answered.
    private var answering: Answering?
    /// The connection carries an event stream; called once when it closes.
    private var streamClosed: (@Sendable () -> Void)?
    private var context: ChannelHandlerContext?

    init(responder: Responder, bodyCap: Int, serverName: String, logger: Logger, connection: HTTPConnection,
         intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)?, executor: EventLoopTaskExecutor?) {
        self.executor = executor
        self.responder = responder
        self.bodyCap = bodyCap
        self.serverName = serverName
        self.logger = logger
        self.connection = connection
        self.intercept = intercept
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard streamClosed == nil else { return }  // a client sends nothing on a stream; whatever comes is ignored
        switch unwrapInboundIn(data) {
        case .head(let head):
            reading = ReadRequest(head: head, body: context.channel.allocator.buffer(capacity: 0))
            // curl and others wait up to a second for this before sending a large body. An HTTP/1.0 client's
            // expectation is ignored (RFC 9110 §10.1.1): it may not be sent a 1xx.
            let expects = head.version != .http1_0 && head.headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" }
            connection.handle { $0.requestHead(expectsContinue: expects) }
        case .body(var chunk):
            guard var request = reading else { return }
            // Past the cap the rest is dropped: the routes see more than their limit and answer 413, and a huge body
            // costs no memory.
            let room = bodyCap - request.body.readableBytes
            if room > 0 {
                if chunk.readableBytes > room { chunk = chunk.getSlice(at: chunk.readerIndex, length: room)! }
                reading = nil  // lets `body` be uniquely referenced while it grows
                request.body.writeBuffer(&chunk)
                reading = request
            }
        case .end:
            guard let request = reading else { return }
            reading = nil
            waiting.append(request)
            if connection.handle({ $0.requestEnd() }) == .dispatch { dispatchNext(context: context) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            connection.handle { $0.inputClosed() }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let closed = streamClosed {
            streamClosed = nil
            closed()
        }
        waiting.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIO's parser refused the input: the connection answers (or closes) and reads nothing more of it.
        guard error is HTTPParserError else {
            context.close(promise: nil)
            return
        }
        let failure: HTTPConnectionStateMachine.ParseFailure = (error as? HTTPParserError) == .headerOverflow ? .headerOverflow : .invalid
        reading = nil
        connection.handle { $0.parseFailed(failure) }
    }

    // MARK: Requests

    private func dispatchNext(context: ChannelHandlerContext) {
        guard !waiting.isEmpty else { return }
        let request = waiting.removeFirst()
        answering = Answering(keepAlive: request.head.isKeepAlive, version: request.head.version, isHead: request.head.method == .HEAD)
        dispatch(request.head, body: request.body, context: context)
    }

    private func dispatch(_ head: HTTPRequestHead, body: ByteBuffer, context: ChannelHandlerContext) {
        var head = head
        let channel = context.channel
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        // One spelling of the path for everything below (guards, intercepts, journal, router): `//__admin` and
        // `/metrics/` must not be one path to the router and another to a guard.
        switch RequestTarget.canonical(head.uri) {
        case .success(let uri): head.uri = uri
        case .failure(let refusal):
            let response = RequestTarget.error(refusal).makeResponse()
            start { await BufferedHTTPHandler.reply(response, close: true, handler: handler, channel: channel) }
            return
        }
        if let intercept {
            let request = BufferedRequest(
                head: head, body: body, channel: channel,
                write: { response, bytes, close in handler.value.write(response, bytes, close: close, channel: channel) },
                startStream: { closed in handler.value.startStream(closed) })
            if case .taken = intercept(request) { return }
        }
        let request: Request
        do {
            request = Request(head: try HTTPRequest(head, secure: false, splitCookie: false), body: RequestBody(buffer: body))
        } catch {
            // A method HTTP types cannot carry (NIO parses a few more): answered like the routes' refusals.
            let refusal = APIError(.badRequest, code: "bad_request", "\(head.method.rawValue) is not a method this server serves")
            start { await BufferedHTTPHandler.reply(refusal.makeResponse(), close: true, handler: handler, channel: channel) }
            return
        }
        let requestContext = Responder.Context(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let responder = self.responder
        start {
            await BufferedHTTPHandler.answer(request, context: requestContext, responder: responder, handler: handler, channel: channel)
        }
    }

    /// Starts the task that makes the current answer; the connection cancels it if it closes first.
    private func start(_ work: sending @escaping @isolated(any) () async -> Void) {
        connection.answerTask = Task(executorPreference: executor, operation: work)
    }

    private static func answer(_ request: Request, context: Responder.Context, responder: Responder,
                               handler: NIOLoopBound<BufferedHTTPHandler>, channel: any Channel) async {
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            // The router turns every HTTPResponseError into its response; anything else is a bug of ours.
            response = APIError(.internalServerError, code: "internal_error", "the server failed to answer this request").makeResponse()
        }
        await reply(response, close: false, handler: handler, channel: channel)
    }

    private func startStream(_ closed: @escaping @Sendable () -> Void) {
        streamClosed = closed
        connection.event { $0.streamOpened() }
    }

    /// Collects the response's body, then writes the response on the connection's event loop.
    private static func reply(_ response: Response, close: Bool, handler: NIOLoopBound<BufferedHTTPHandler>, channel: any Channel) async {
        let bytes = await collectBody(response.body)
        let head = response.head
        channel.eventLoop.runNowOrLater { handler.value.write(head, bytes, close: close, channel: channel) }
    }

    /// Writes the current request's answer whole, then lets the next request in (or closes the connection).
    private func write(_ response: HTTPResponse, _ body: ByteBuffer, close: Bool, channel: any Channel) {
        guard let request = answering else { return }  // answered already
        answering = nil
        connection.answerTask = nil
        var head = HTTPResponseHead(response)
        head.headers.replaceOrAdd(name: "server", value: serverName)
        head.headers.replaceOrAdd(name: "date", value: HTTPDate.now)
        let code = response.status.code
        if code != 204 && code != 304 && !(100..<200).contains(code) {
            head.headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        }
        let closing = connection.event { $0.answerStarts(keepAlive: request.keepAlive && !close) }
        if closing {
            head.headers.replaceOrAdd(name: "connection", value: "close")
        } else if request.version == .http1_0 {
            // An HTTP/1.0 client keeps the connection only when the answer says so.
            head.headers.replaceOrAdd(name: "connection", value: "keep-alive")
        }
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        // A HEAD answer has the headers a GET's would have, and no body.
        if body.readableBytes > 0 && !request.isHead { channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil) }
        let ended = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        let action = connection.event { [now = channel.eventLoop.now] in $0.answerEnded(now: now) }
        switch action {
        case .dispatch:
            if let context { dispatchNext(context: context) }
        case .close:
            // After the answer has gone out: closing now would fail the writes still queued.
            ended.whenComplete { _ in channel.close(promise: nil) }
        default:
            connection.perform(action)
        }
    }
}

/// The whole of a response body (the routes answer bodies they have already made).
private func collectBody(_ body: ResponseBody) async -> ByteBuffer {
    let collected = BodyCollector.Storage()
    try? await body.write(BodyCollector(storage: collected))
    return collected.buffer.withLock { $0 }
}

/// Collects a response body written by a route.
private struct BodyCollector: ResponseBodyWriter, Sendable {
    final class Storage: Sendable {
        let buffer = Mutex(ByteBuffer())
    }

    let storage: Storage
    func write(_ part: ByteBuffer) async throws {
        storage.buffer.withLock { collected in
            var part = part
            collected.writeBuffer(&part)
        }
    }
    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// The `Date` header's value, formatted once per second for every connection.
enum HTTPDate {
    private static let cache = Mutex<(second: Int64, text: String)>((.min, ""))

    static var now: String {
        let now = Date()
        let second = Int64(now.timeIntervalSince1970.rounded(.down))
        return cache.withLock { cached in
            if cached.second != second { cached = (second, WireTime.httpDate(now)) }
            return cached.text
        }
    }
}

extension EventLoop {
    /// Runs `body` at once when called on this loop, else queues it there.
    func runNowOrLater(_ body: @escaping @Sendable () -> Void) {
        if inEventLoop { body() } else { execute(body) }
    }
}
