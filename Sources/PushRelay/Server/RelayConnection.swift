import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import ServerSupport
import Synchronization

/// The relay's connections, served by NIO channel handlers instead of a Swift task per connection.
///
/// Hummingbird's HTTP/1 server keeps each connection in a child task of one task group, with an async channel, a
/// request body stream and (for an event stream) a response writer task: about 25 kB of memory per open stream, and
/// with Swift 6.3's task groups every connection that opens or closes walks the list of all the others (a reconnect
/// storm of 18,000 devices spent a fifth of the relay's CPU there). Here the Hummingbird server only binds and accepts;
/// `handle(value:logger:)` returns at once, and the connection lives in its pipeline: NIO's HTTP/1 codec, then
/// `RelayHTTPHandler`. An event stream is a `ChannelStreamSink` the hub writes to directly; every other request is
/// read whole and answered by the relay's Hummingbird router in a task of its own.
struct RelayChildChannel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
    }

    let responder: RouterResponder<BasicRequestContext>
    let hub: RelayHub
    /// Bytes of a request body kept; one more than the routes' limits, so that they still answer 413 past them.
    let bodyCap: Int
    let serverName: String
    let logger: Logger
    /// `--control-token`: required on `/__control` (the health answer on the event loop included) and `/metrics`.
    let controlToken: String?
    let bound: BoundAddress
    let limits: ConnectionLimits
    /// Stream opens and health answers are journaled here (the router's requests by its middleware).
    let journal: RequestJournal

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
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
            try pipeline.addHandler(RelayHTTPHandler(responder: responder, hub: hub, bodyCap: bodyCap, serverName: serverName, logger: logger,
                                                     controlToken: controlToken, bound: bound, hygiene: hygiene, journal: journal))
            return Value(channel: channel)
        }
    }

    /// Nothing to do: the connection is served by its pipeline, and this task ends at once.
    func handle(value: Value, logger: Logger) async {}
}

/// One connection's requests: reads each one whole, answers it, and turns `GET /v1/devices/{token}/stream` into a
/// stream the hub writes to. Runs on the connection's event loop.
final class RelayHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// Head read; body bytes so far (at most `bodyCap`).
        case reading(HTTPRequestHead, ByteBuffer)
        /// A response is being made; the pipeline handler holds any next request back until it has ended.
        case responding
        /// The connection carries an event stream until the hub or the client ends it.
        case streaming(ChannelStreamSink)
    }

    private let responder: RouterResponder<BasicRequestContext>
    private let hub: RelayHub
    private let bodyCap: Int
    private let serverName: String
    private let logger: Logger
    private let controlToken: String?
    private let bound: BoundAddress
    private let hygiene: ConnectionHygiene
    private let journal: RequestJournal
    private var state = State.idle
    /// The client closed its sending side after a request: answer it, then close (no further request can come).
    private var inputClosed = false

    init(responder: RouterResponder<BasicRequestContext>, hub: RelayHub, bodyCap: Int, serverName: String, logger: Logger,
         controlToken: String?, bound: BoundAddress, hygiene: ConnectionHygiene, journal: RequestJournal) {
        self.journal = journal
        self.controlToken = controlToken
        self.bound = bound
        self.hygiene = hygiene
        self.responder = responder
        self.hub = hub
        self.bodyCap = bodyCap
        self.serverName = serverName
        self.logger = logger
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
            // A client sends nothing on an event stream; whatever comes is ignored until it closes.
            break
        default:
            // HTTPServerPipelineHandler delivers one request at a time, in order; anything else is a broken client.
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A client that closes its side of an event stream has left: end the stream now rather than at a failed write.
        // One that half-closes after sending a request still gets its answer (then the connection closes).
        if let event = event as? ChannelEvent, event == .inputClosed {
            switch state {
            case .streaming(let sink):
                sink.channelClosed()
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
        if case .streaming(let sink) = state { sink.channelClosed() }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: Requests

    private func dispatch(_ head: HTTPRequestHead, body: ByteBuffer, context: ChannelHandlerContext) {
        let keepAlive = head.isKeepAlive
        let channel = context.channel
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        if head.method == .GET, let token = Self.streamToken(head.uri) {
            let sink = ChannelStreamSink(channel: channel, serverName: serverName)
            state = .streaming(sink)
            hygiene.streamOpened()
            let hub = self.hub
            let lastEventID = head.headers.first(name: "Last-Event-ID")
            let journal = self.journal
            let path = String(decoding: Self.path(head.uri), as: UTF8.self)
            let started = ContinuousClock.now
            Task {
                let status = await RelayHTTPHandler.openStream(token: token, lastEventID: lastEventID, sink: sink, hub: hub, handler: handler,
                                                               channel: channel)
                journal.record(method: "GET", path: path, status: status, started: started, token: token)
            }
            return
        }
        if head.method == .GET, Self.path(head.uri).elementsEqual("/__control/health".utf8) {
            // Answered here, on the connection's event loop: health says the relay accepts and answers connections, and
            // must stay fast while thousands of streams reconnect and the task pool is busy with them. The control plane's
            // rules apply to it as to the rest of `/__control`.
            if let refusal = ControlPlaneGuard<BasicRequestContext>.check(
                method: .get, authority: head.headers.first(name: "host"), origin: head.headers.first(name: "origin"),
                authorization: head.headers.first(name: "authorization"), contentType: head.headers.first(name: "content-type"),
                hasBody: body.readableBytes > 0, token: controlToken, boundURL: bound.url) {
                let response = refusal.makeResponse()
                Task { await RelayHTTPHandler.reply(response, keepAlive: keepAlive, handler: handler, channel: channel) }
                return
            }
            write(HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), ByteBuffer(string: Self.healthBody(node: hub.nodeID)),
                  keepAlive: keepAlive, channel: channel)
            journal.record(method: "GET", path: "/__control/health", status: 200, started: .now)
            return
        }
        let request: Request
        do {
            request = Request(head: try HTTPRequest(head, secure: false, splitCookie: false), body: RequestBody(buffer: body))
        } catch {
            // A method HTTP types cannot carry (NIO parses a few more): nothing of the relay's, answered like the rest.
            let refusal = APIError(.badRequest, code: "bad_request", "\(head.method.rawValue) is not a method the relay serves")
            Task { await RelayHTTPHandler.reply(refusal.makeResponse(), keepAlive: false, handler: handler, channel: channel) }
            return
        }
        let requestContext = BasicRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let responder = self.responder
        Task { await RelayHTTPHandler.answer(request, context: requestContext, responder: responder, keepAlive: keepAlive, handler: handler, channel: channel) }
    }

    /// Opens the stream; returns the status answered (200, or the refusal's).
    private static func openStream(token: String, lastEventID: String?, sink: ChannelStreamSink, hub: RelayHub,
                                   handler: NIOLoopBound<RelayHTTPHandler>, channel: any Channel) async -> Int {
        do throws(RelayHub.ConnectError) {
            let id = try await hub.connect(token: token, lastEventID: lastEventID, sink: sink)
            sink.connected(id: id, hub: hub, token: token)
            return 200
        } catch {
            let refusal = refusal(error)
            await reply(refusal.makeResponse(), keepAlive: false, handler: handler, channel: channel)
            return Int(refusal.status.code)
        }
    }

    private static func answer(_ request: Request, context: BasicRequestContext, responder: RouterResponder<BasicRequestContext>,
                               keepAlive: Bool, handler: NIOLoopBound<RelayHTTPHandler>, channel: any Channel) async {
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            // The router turns every HTTPResponseError into its response; anything else is a bug of ours.
            response = APIError(.internalServerError, code: "internal_error", "the relay failed to answer this request").makeResponse()
        }
        await reply(response, keepAlive: keepAlive, handler: handler, channel: channel)
    }

    /// Collects the response's body, then writes the response on the connection's event loop.
    private static func reply(_ response: Response, keepAlive: Bool, handler: NIOLoopBound<RelayHTTPHandler>, channel: any Channel) async {
        let bytes = await collect(response.body)
        let head = response.head
        channel.eventLoop.execute { handler.value.write(head, bytes, keepAlive: keepAlive, channel: channel) }
    }

    private static func refusal(_ error: RelayHub.ConnectError) -> APIError {
        switch error {
        case .unknownToken: APIError(.notFound, code: "unknown_token", "no device has this token")
        case .unregistered: APIError(.gone, code: "unregistered", "token was rotated or deleted")
        case .unreachable: APIError(.serviceUnavailable, code: "device_unreachable", "the control API made this device unreachable")
        }
    }

    /// Writes a whole response; closes the connection after it when the request asked for that (or a refusal ended a
    /// stream request).
    private func write(_ response: HTTPResponse, _ body: ByteBuffer, keepAlive: Bool, channel: any Channel) {
        var head = HTTPResponseHead(response)
        head.headers.replaceOrAdd(name: "server", value: serverName)
        let code = response.status.code
        if code != 204 && code != 304 && !(100..<200).contains(code) {
            head.headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        }
        let close = !keepAlive || inputClosed
        if close { head.headers.replaceOrAdd(name: "connection", value: "close") }
        state = .idle
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        if body.readableBytes > 0 { channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil) }
        let ended = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if close { ended.whenComplete { _ in channel.close(promise: nil) } }
    }

    /// The whole of a response body (the relay's routes answer small JSON bodies).
    private static func collect(_ body: ResponseBody) async -> ByteBuffer {
        let collected = BodyCollector.Storage()
        try? await body.write(BodyCollector(storage: collected))
        return collected.buffer.withLock { $0 }
    }

    /// `GET /__control/health`: the relay's status and version.
    /// The node id is a string, as every other member: clients that read the body as a map of strings keep working.
    static func healthBody(node: Int) -> String {
        #"{"node_id":"\#(node)","status":"ok","version":"\#(PushRelayServer.version)"}"#
    }

    /// The token of `/v1/devices/{token}/stream` (a query string is allowed and ignored), or nil for any other path.
    /// Taken as sent, like the router's path parameters. Compares bytes: it runs for every request on the event loop.
    static func streamToken(_ uri: String) -> String? {
        let path = Self.path(uri)
        let prefix = "/v1/devices/".utf8, suffix = "/stream".utf8
        guard path.count > prefix.count + suffix.count, path.starts(with: prefix), path.reversed().starts(with: suffix.reversed()) else {
            return nil
        }
        let token = path.dropFirst(prefix.count).dropLast(suffix.count)
        guard !token.contains(UInt8(ascii: "/")) else { return nil }
        return String(decoding: token, as: UTF8.self)
    }
}

extension RelayHTTPHandler {
    /// The path of a request target, without its query string.
    static func path(_ uri: String) -> Substring.UTF8View {
        let bytes = uri.utf8[...]
        return bytes.firstIndex(of: UInt8(ascii: "?")).map { bytes[..<$0] } ?? bytes
    }
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

/// One device's event stream on its connection. The hub calls it in order, from its actor; each call queues the bytes
/// on the connection's event loop and returns. It also ties the connection's end to the hub: whichever of "the hub
/// accepted the connect" and "the connection closed" comes second tells the hub the device left.
final class ChannelStreamSink: StreamSink {
    private struct Link {
        var id: UInt64?
        var hub: RelayHub?
        var token: String?
        var closed = false
    }

    private let channel: any Channel
    private let serverName: String
    private let link = Mutex(Link())

    init(channel: any Channel, serverName: String) {
        self.channel = channel
        self.serverName = serverName
    }

    func open() {
        // A stream carries small events and at most an ack batch of backlog at a time; a fixed 64 kB send buffer
        // (instead of the kernel's autotuning up to megabytes) lets a client that stopped reading be noticed after
        // about a hundred kilobytes rather than several megabytes.
        channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: 64 << 10).whenFailure { _ in }
        let head = HTTPResponseHead(version: .http1_1, status: .ok,
                                    headers: ["content-type": "text/event-stream", "cache-control": "no-cache", "server": serverName])
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: ": connected\n\n"))), promise: nil)
    }

    func send(_ item: StreamItem) {
        // A client that stopped reading: the kernel's buffers are full and NIO holds more than its high watermark
        // (64 kB). Rather than buffer without bound, the relay drops the connection; what the device has not acked is
        // sent again when it reconnects.
        guard channel.isWritable else {
            channel.close(promise: nil)
            return
        }
        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: SSE.encode(item)))), promise: nil)
    }

    func finish() {
        // The stream's connection is not reused: the client opened it for this stream.
        let channel = self.channel
        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The hub accepted the connect as connection `id`.
    func connected(id: UInt64, hub: RelayHub, token: String) {
        let closedAlready = link.withLock { link in
            link.id = id
            link.hub = hub
            link.token = token
            return link.closed
        }
        if closedAlready { Task { await hub.disconnect(token: token, connectionID: id) } }
    }

    /// The client went away (or the connection was closed).
    func channelClosed() {
        let known: (RelayHub, String, UInt64)? = link.withLock { link in
            guard !link.closed else { return nil }
            link.closed = true
            guard let id = link.id, let hub = link.hub, let token = link.token else { return nil }
            return (hub, token, id)
        }
        if let (hub, token, id) = known { Task { await hub.disconnect(token: token, connectionID: id) } }
    }
}
