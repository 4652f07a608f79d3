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
/// storm of 18,000 devices spent a fifth of the relay's CPU there). Each connection is a ``BufferedHTTPChannel``
/// instead (NIO's HTTP/1 codec, requests read whole on the event loop). Before the router, ``intercept(_:)`` takes two
/// routes on the event loop: an event stream becomes a `ChannelStreamSink` the hub writes to directly, and health is
/// answered at once; every other request is answered by the relay's Hummingbird router in a task of its own.
struct RelayConnection: Sendable {
    let hub: RelayHub
    let serverName: String
    /// `--control-token`: required on `/__control` (the health answer on the event loop included) and `/metrics`.
    let controlToken: String?
    let bound: BoundAddress
    /// Stream opens and health answers are journaled here (the router's requests by its middleware).
    let journal: RequestJournal

    /// Takes `GET /v1/devices/{token}/stream` and `GET /__control/health`; passes everything else to the router.
    func intercept(_ request: BufferedRequest) -> BufferedRequest.Outcome {
        let head = request.head
        guard head.method == .GET else { return .pass }
        if let token = Self.streamToken(head.uri) {
            let sink = ChannelStreamSink(channel: request.channel, serverName: serverName)
            request.stream(closed: { sink.channelClosed() })
            let hub = self.hub
            let lastEventID = head.headers.first(name: "Last-Event-ID")
            let journal = self.journal
            let path = String(decoding: request.path, as: UTF8.self)
            let started = ContinuousClock.now
            Task {
                let status = await Self.openStream(token: token, lastEventID: lastEventID, sink: sink, hub: hub, request: request)
                journal.record(method: "GET", path: path, status: status, started: started, token: token)
            }
            return .taken
        }
        guard request.path.elementsEqual("/__control/health".utf8) else { return .pass }
        // Answered here, on the connection's event loop: health says the relay accepts and answers connections, and
        // must stay fast while thousands of streams reconnect and the task pool is busy with them. The control plane's
        // rules apply to it as to the rest of `/__control`.
        if let refusal = ControlPlaneGuard<BasicRequestContext>.check(
            method: .get, authority: head.headers.first(name: "host"), origin: head.headers.first(name: "origin"),
            authorization: head.headers.first(name: "authorization"), contentType: head.headers.first(name: "content-type"),
            hasBody: request.body.readableBytes > 0, token: controlToken, boundURL: bound.url) {
            let response = refusal.makeResponse()
            Task { await request.respond(response) }
            return .taken
        }
        request.respond(HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]),
                        ByteBuffer(string: Self.healthBody(node: hub.nodeID)))
        journal.record(method: "GET", path: "/__control/health", status: 200, started: .now)
        return .taken
    }

    /// Opens the stream; returns the status answered (200, or the refusal's, after which the connection closes).
    private static func openStream(token: String, lastEventID: String?, sink: ChannelStreamSink, hub: RelayHub,
                                   request: BufferedRequest) async -> Int {
        do throws(RelayHub.ConnectError) {
            let id = try await hub.connect(token: token, lastEventID: lastEventID, sink: sink)
            sink.connected(id: id, hub: hub, token: token)
            return 200
        } catch {
            let refusal = refusal(error)
            await request.respond(refusal.makeResponse(), close: true)
            return Int(refusal.status.code)
        }
    }

    private static func refusal(_ error: RelayHub.ConnectError) -> APIError {
        switch error {
        case .unknownToken: APIError(.notFound, code: "unknown_token", "no device has this token")
        case .unregistered: APIError(.gone, code: "unregistered", "token was rotated or deleted")
        case .unreachable: APIError(.serviceUnavailable, code: "device_unreachable", "the control API made this device unreachable")
        }
    }

    /// `GET /__control/health`: the relay's status and version.
    /// The node id is a string, as every other member: clients that read the body as a map of strings keep working.
    static func healthBody(node: Int) -> String {
        #"{"node_id":"\#(node)","status":"ok","version":"\#(PushRelayServer.version)"}"#
    }

    /// The token of `/v1/devices/{token}/stream` (a query string is allowed and ignored), or nil for any other path.
    /// Taken as sent, like the router's path parameters. Compares bytes: it runs for every request on the event loop.
    static func streamToken(_ uri: String) -> String? {
        let path = BufferedRequest.path(uri)
        let prefix = "/v1/devices/".utf8, suffix = "/stream".utf8
        guard path.count > prefix.count + suffix.count, path.starts(with: prefix), path.reversed().starts(with: suffix.reversed()) else {
            return nil
        }
        let token = path.dropFirst(prefix.count).dropLast(suffix.count)
        guard !token.contains(UInt8(ascii: "/")) else { return nil }
        return String(decoding: token, as: UTF8.self)
    }
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
