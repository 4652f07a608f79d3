import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import SurveyWire
import Synchronization

/// The device link (PROTOCOL.md §4): tokens, the event stream, acks, rotation and uninstall.
struct DeviceRoutes {
    let hub: RelayHub
    let configuration: RelayConfiguration

    func add(to router: Router<RelayRequestContext>) {
        router.post("/v1/devices") { request, _ -> Response in
            let body = try await request.decodeJSON(RelayWire.DeviceRequest.self)
            guard let platform = Platform(rawValue: body.platform) else {
                throw APIError(.badRequest, code: "invalid_platform", "platform must be \"ios\" or \"android\", got \"\(body.platform)\"", field: "platform")
            }
            guard !body.appID.isEmpty else { throw APIError(.badRequest, code: "missing_field", "app_id must not be empty", field: "app_id") }
            let token = await hub.register(platform: platform, appID: body.appID)
            return JSONResponse.make(RelayWire.TokenResponse(token: token), status: .created)
        }
        router.get("/v1/devices/{token}/stream") { request, context in try await stream(request, context) }
        router.post("/v1/devices/{token}/ack") { request, context -> Response in
            let token = try context.parameters.require("token")
            let body = try await request.decodeJSON(RelayWire.AckRequest.self)
            guard await hub.ack(token: token, ids: body.ids) else { throw try await missing(token) }
            return JSONResponse.empty(.noContent)
        }
        router.post("/v1/devices/{token}/rotate") { _, context -> Response in
            let token = try context.parameters.require("token")
            guard let fresh = await hub.rotate(token: token) else { throw try await missing(token) }
            return JSONResponse.make(RelayWire.TokenResponse(token: fresh))
        }
        router.delete("/v1/devices/{token}") { _, context -> Response in
            let token = try context.parameters.require("token")
            guard await hub.delete(token: token) else { throw try await missing(token) }
            return JSONResponse.empty(.noContent)
        }
    }

    private func missing(_ token: String) async throws -> APIError {
        if await hub.isRetired(token) != nil {
            return APIError(.gone, code: "unregistered", "token was rotated or deleted")
        }
        return APIError(.notFound, code: "unknown_token", "no device has this token")
    }

    private func stream(_ request: Request, _ context: RelayRequestContext) async throws -> Response {
        let token = try context.parameters.require("token")
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!]
        let connectionID: UInt64
        let items: AsyncStream<StreamItem>
        do {
            (connectionID, items) = try await hub.connect(token: token, lastEventID: lastEventID)
        } catch {
            switch error {
            case .unknownToken: throw APIError(.notFound, code: "unknown_token", "no device has this token")
            case .unregistered: throw APIError(.gone, code: "unregistered", "token was rotated or deleted")
            case .unreachable: throw APIError(.serviceUnavailable, code: "device_unreachable", "the control API made this device unreachable")
            }
        }
        let hub = self.hub
        // A client that goes away closes its side of the connection; a small handler at the head of the channel's
        // pipeline sees that and ends the stream at once instead of waiting for a write to fail. (Hummingbird's
        // consumeWithInboundCloseHandler does the same with a task group, a child task and a body stream per
        // connection: about 6 kB of the relay's memory per stream.)
        let watcher = InboundCloseWatcher { Task { await hub.disconnect(token: token, connectionID: connectionID) } }
        let channel = context.channel
        try? await channel.pipeline.addHandler(watcher, position: .first).get()
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                // Keepalives come from the hub's one ticker for all streams (KeepaliveService), not a task per stream.
                do {
                    try await writer.write(ByteBuffer(string: ": connected\n\n"))
                    for await item in items {
                        try await writer.write(ByteBuffer(string: SSE.encode(item)))
                    }
                } catch {
                    // The client went away; fall through to disconnect.
                }
                await hub.disconnect(token: token, connectionID: connectionID)
                // The connection may carry another request next; the watcher is only for this stream.
                try? await channel.pipeline.removeHandler(watcher).get()
                try? await writer.finish(nil)
            }
        )
    }
}

/// Server-sent event framing for relay output.
enum SSE {
    static func encode(_ item: StreamItem) -> String {
        switch item {
        case .keepalive:
            return ": keepalive\n\n"
        case .outgoing(.deletedMessages):
            return "event: deleted_messages\ndata: {}\n\n"
        case .outgoing(.push(let message)):
            return "id: \(message.id)\nevent: push\ndata: \(message.compactText)\n\n"
        }
    }
}

/// The relay's request context: Hummingbird's basics plus the connection's channel (for the stream handler's watcher).
public struct RelayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Calls `onClose` once when the peer closes its side of the connection (or the connection goes away).
final class InboundCloseWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny
    private let onClose: @Sendable () -> Void
    private let fired = Mutex(false)

    init(onClose: @escaping @Sendable () -> Void) {
        self.onClose = onClose
    }

    private func fire() {
        let first = fired.withLock { done in
            defer { done = true }
            return !done
        }
        if first { onClose() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { fire() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fire()
        context.fireChannelInactive()
    }
}
