import Foundation
import HTTPTypes
import Hummingbird
import ServerSupport
import SurveyWire

/// The device link (PROTOCOL.md §4): tokens, the event stream, acks, rotation and uninstall.
struct DeviceRoutes {
    let hub: RelayHub
    let configuration: RelayConfiguration

    func add(to router: Router<BasicRequestContext>) {
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

    private func stream(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let token = try context.parameters.require("token")
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!]
        let connectionID: UInt64
        let items: AsyncStream<StreamItem>
        do {
            (connectionID, items) = try await hub.connect(token: token, lastEventID: lastEventID)
        } catch let error as RelayHub.ConnectError {
            switch error {
            case .unknownToken: throw APIError(.notFound, code: "unknown_token", "no device has this token")
            case .unregistered: throw APIError(.gone, code: "unregistered", "token was rotated or deleted")
            case .unreachable: throw APIError(.serviceUnavailable, code: "device_unreachable", "the control API made this device unreachable")
            }
        }
        let hub = self.hub
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                // Keepalives come from the hub's one ticker for all streams (KeepaliveService), not a task per stream.
                do {
                    // A client that goes away closes the inbound side; that ends the stream at once instead of
                    // waiting for a write to fail.
                    try await request.body.consumeWithInboundCloseHandler { _ in
                        try await writer.write(ByteBuffer(string: ": connected\n\n"))
                        for await item in items {
                            try await writer.write(ByteBuffer(string: SSE.encode(item)))
                        }
                    } onInboundClosed: {
                        Task { await hub.disconnect(token: token, connectionID: connectionID) }
                    }
                } catch {
                    // The client went away; fall through to disconnect.
                }
                await hub.disconnect(token: token, connectionID: connectionID)
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
            let json = (try? WireJSON.encodeString(message)) ?? "{}"
            return "id: \(message.id)\nevent: push\ndata: \(json)\n\n"
        }
    }
}
