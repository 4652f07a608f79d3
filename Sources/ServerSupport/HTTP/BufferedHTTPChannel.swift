import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
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
public struct BufferedHTTPChannel<Responder: HTTPResponder>: ServerChildChannel
where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    /// A set-up connection (Hummingbird's server keeps it until `handle` returns, which is at once).
    public struct Value: ServerChildChannelValue {
        /// The connection's channel.
        public let channel: any Channel
    }

    let responder: Responder
    let bodyCap: Int
    let serverName: String
    let logger: Logger
    let limits: ConnectionLimits
    let intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)?
    let onEventLoop: Bool

    /// - Parameters:
    ///   - bodyCap: bytes of a request body kept; past it the rest is dropped (give one more than the routes' largest
    ///     limit, so they still see an over-long body and answer 413).
    ///   - intercept: sees each request first, on the event loop, and may take it (the relay's event streams).
    ///   - onEventLoop: run each request's task on its connection's event loop (``EventLoopTaskExecutor``) rather than
    ///     on Swift's cooperative pool; for routes that never block for long.
    public init(responder: Responder, bodyCap: Int, serverName: String, logger: Logger, limits: ConnectionLimits,
                intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)? = nil, onEventLoop: Bool = false) {
        self.onEventLoop = onEventLoop
        self.responder = responder
        self.bodyCap = bodyCap
        self.serverName = serverName
        self.logger = logger
        self.limits = limits
        self.intercept = intercept
    }

    /// Builds the connection's pipeline: deadlines, NIO's HTTP/1 codec with pipelining assistance, the request
    /// counter, then the handler that reads requests whole and answers them.
    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            let hygiene = ConnectionHygiene(limits: limits, serverName: serverName)
            // Deadlines in front of everything (they see the first byte of each request).
            try pipeline.addHandler(ConnectionTimerHandler(hygiene))
            // Pipelining assistance holds a second request back until the first one's response has ended. Requests NIO
            // cannot parse are answered by the hygiene handler (JSON 400 or 431, then close).
            try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: false)
            // Behind the decoder, before the pipelining handler: it sees every request a client pipelines, so it can
            // disconnect one that sends more than `maxPipelined` without reading the answers.
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(RequestPartsHygieneHandler(nio: hygiene), position: .after(decoder))
            try pipeline.addHandler(BufferedHTTPHandler(responder: responder, bodyCap: bodyCap, serverName: serverName, logger: logger,
                                                        hygiene: hygiene, intercept: intercept,
                                                        executor: onEventLoop ? EventLoopTaskExecutor(channel.eventLoop) : nil))
            return Value(channel: channel)
        }
    }

    /// Nothing to do: the connection is served by its pipeline, and this task ends at once.
    public func handle(value: Value, logger: Logger) async {}
}

/// A request read whole, as an interceptor sees it (on the connection's event loop).
public struct BufferedRequest: Sendable {
    /// The request line and headers.
    public let head: HTTPRequestHead
    /// The whole body (at most the channel's body cap).
    public let body: ByteBuffer
    /// The connection it came on.
    public let channel: any Channel
    let write: @Sendable (HTTPResponse, ByteBuffer, _ close: Bool) -> Void
    let startStream: @Sendable (_ closed: @escaping @Sendable () -> Void) -> Void

    /// The path of the request target, without its query string.
    public var path: Substring.UTF8View { BufferedRequest.path(head.uri) }

    /// The path of a request target, without its query string.
    public static func path(_ uri: String) -> Substring.UTF8View {
        let bytes = uri.utf8[...]
        return bytes.firstIndex(of: UInt8(ascii: "?")).map { bytes[..<$0] } ?? bytes
    }

    /// Writes a whole response and lets the next request in; `close` closes the connection after it (as does a request
    /// that asked for that). May be called from any thread.
    public func respond(_ response: HTTPResponse, _ body: ByteBuffer, close: Bool = false) {
        channel.eventLoop.runNowOrLater { [write] in write(response, body, close) }
    }

    /// Writes a router-style response (a refusal's `makeResponse()`), its body collected first.
    public func respond(_ response: Response, close: Bool = false) async {
        respond(response.head, await collectBody(response.body), close: close)
    }

    /// Hands the connection to a stream (the connection's deadlines stop): later reads are ignored, and `closed` is
    /// called once when the client leaves. Call on the event loop, before the interceptor returns.
    public func stream(closed: @escaping @Sendable () -> Void) {
        startStream(closed)
    }

    /// What an interceptor did with a request.
    public enum Outcome: Sendable {
        /// Not taken: the router answers it.
        case pass
        /// Taken: the interceptor answers it (through `respond`) or streams on the connection.
        case taken
    }
}

/// One connection's requests, read whole and answered one at a time. Runs on the connection's event loop.
final class BufferedHTTPHandler<Responder: HTTPResponder>: ChannelInboundHandler, RemovableChannelHandler
where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// Head read; body bytes so far (at most `bodyCap`).
        case reading(HTTPRequestHead, ByteBuffer)
        /// A response is being made; the pipeline handler holds any next request back until it has ended.
        case responding
        /// The connection carries a stream until it closes.
        case streaming(@Sendable () -> Void)
    }

    private let responder: Responder
    private let bodyCap: Int
    private let serverName: String
    private let logger: Logger
    private let hygiene: ConnectionHygiene
    private let intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)?
    /// Where request tasks run: the connection's event loop, or (nil) Swift's cooperative pool.
    private let executor: EventLoopTaskExecutor?
    private var state = State.idle
    /// The client closed its sending side after a request: answer it, then close (no further request can come).
    private var inputClosed = false

    init(responder: Responder, bodyCap: Int, serverName: String, logger: Logger, hygiene: ConnectionHygiene,
         intercept: (@Sendable (BufferedRequest) -> BufferedRequest.Outcome)?, executor: EventLoopTaskExecutor?) {
        self.executor = executor
        self.responder = responder
        self.bodyCap = bodyCap
        self.serverName = serverName
        self.logger = logger
        self.hygiene = hygiene
        self.intercept = intercept
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .idle):
            state = .reading(head, context.channel.allocator.buffer(capacity: 0))
            // curl and others wait up to a second for this before sending a large body.
            if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
            }
        case (.body(var chunk), .reading(let head, var body)):
            // Past the cap the rest is dropped: the routes see more than their limit and answer 413, and a huge body
            // costs no memory.
            let room = bodyCap - body.readableBytes
            if room > 0 {
                if chunk.readableBytes > room { chunk = chunk.getSlice(at: chunk.readerIndex, length: room)! }
                state = .idle  // lets `body` be uniquely referenced while it grows
                body.writeBuffer(&chunk)
            }
            state = .reading(head, body)
        case (.end, .reading(let head, let body)):
            state = .responding
            dispatch(head, body: body, context: context)
        case (_, .streaming):
            // A client sends nothing on a stream; whatever comes is ignored until it closes.
            break
        default:
            // HTTPServerPipelineHandler delivers one request at a time, in order; anything else is a broken client.
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A client that closes its side of a stream has left: end the stream now rather than at a failed write.
        // One that half-closes after sending a request still gets its answer (then the connection closes).
        if let event = event as? ChannelEvent, event == .inputClosed {
            switch state {
            case .streaming(let closed):
                state = .idle
                closed()
                context.close(promise: nil)
            case .responding:
                inputClosed = true
            case .idle, .reading:
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .streaming(let closed) = state {
            state = .idle
            closed()
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: Requests

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
            Task { await BufferedHTTPHandler.reply(response, keepAlive: false, handler: handler, channel: channel) }
            return
        }
        let keepAlive = head.isKeepAlive
        if let intercept {
            let request = BufferedRequest(
                head: head, body: body, channel: channel,
                write: { response, bytes, close in handler.value.write(response, bytes, keepAlive: keepAlive && !close, channel: channel) },
                startStream: { closed in handler.value.startStream(closed) })
            if case .taken = intercept(request) { return }
        }
        let request: Request
        do {
            request = Request(head: try HTTPRequest(head, secure: false, splitCookie: false), body: RequestBody(buffer: body))
        } catch {
            // A method HTTP types cannot carry (NIO parses a few more): answered like the routes' refusals.
            let refusal = APIError(.badRequest, code: "bad_request", "\(head.method.rawValue) is not a method this server serves")
            Task { await BufferedHTTPHandler.reply(refusal.makeResponse(), keepAlive: false, handler: handler, channel: channel) }
            return
        }
        let requestContext = Responder.Context(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let responder = self.responder
        Task(executorPreference: executor) {
            await BufferedHTTPHandler.answer(request, context: requestContext, responder: responder, keepAlive: keepAlive, handler: handler,
                                             channel: channel)
        }
    }

    private static func answer(_ request: Request, context: Responder.Context, responder: Responder, keepAlive: Bool,
                               handler: NIOLoopBound<BufferedHTTPHandler>, channel: any Channel) async {
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            // The router turns every HTTPResponseError into its response; anything else is a bug of ours.
            response = APIError(.internalServerError, code: "internal_error", "the server failed to answer this request").makeResponse()
        }
        await reply(response, keepAlive: keepAlive, handler: handler, channel: channel)
    }

    private func startStream(_ closed: @escaping @Sendable () -> Void) {
        state = .streaming(closed)
        hygiene.streamOpened()
    }

    /// Collects the response's body, then writes the response on the connection's event loop.
    private static func reply(_ response: Response, keepAlive: Bool, handler: NIOLoopBound<BufferedHTTPHandler>, channel: any Channel) async {
        let bytes = await collectBody(response.body)
        let head = response.head
        channel.eventLoop.runNowOrLater { handler.value.write(head, bytes, keepAlive: keepAlive, channel: channel) }
    }

    /// Writes a whole response; closes the connection after it when the request asked for that.
    private func write(_ response: HTTPResponse, _ body: ByteBuffer, keepAlive: Bool, channel: any Channel) {
        var head = HTTPResponseHead(response)
        head.headers.replaceOrAdd(name: "server", value: serverName)
        head.headers.replaceOrAdd(name: "date", value: HTTPDate.now)
        let code = response.status.code
        if code != 204 && code != 304 && !(100..<200).contains(code) {
            head.headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        }
        let close = !keepAlive || inputClosed
        if close { head.headers.replaceOrAdd(name: "connection", value: "close") }
        if case .responding = state { state = .idle }
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        if body.readableBytes > 0 { channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil) }
        let ended = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if close { ended.whenComplete { _ in channel.close(promise: nil) } }
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
