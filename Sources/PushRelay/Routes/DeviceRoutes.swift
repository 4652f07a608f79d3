import Foundation
import Hummingbird
import ServerSupport
import SurveyWire

/// The device link (PROTOCOL.md §4): tokens, acks, rotation and uninstall. The event stream
/// (`GET /v1/devices/{token}/stream`) is served by the connection handler itself (`RelayConnection`), not the router.
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
            try await hub.committed()
            return JSONResponse.make(RelayWire.TokenResponse(token: token), status: .created)
        }
        router.post("/v1/devices/{token}/ack") { request, context -> Response in
            let token = try context.parameters.require("token")
            let body = try await request.decodeJSON(RelayWire.AckRequest.self, fast: RelayWire.AckRequest.init(json:))
            guard await hub.ack(token: token, ids: body.ids) else { throw try await missing(token) }
            try await hub.committed()
            return JSONResponse.empty(.noContent)
        }
        router.post("/v1/devices/{token}/rotate") { _, context -> Response in
            let token = try context.parameters.require("token")
            guard let fresh = await hub.rotate(token: token) else { throw try await missing(token) }
            try await hub.committed()
            return JSONResponse.make(RelayWire.TokenResponse(token: fresh))
        }
        router.delete("/v1/devices/{token}") { _, context -> Response in
            let token = try context.parameters.require("token")
            guard await hub.delete(token: token) else { throw try await missing(token) }
            try await hub.committed()
            return JSONResponse.empty(.noContent)
        }
    }

    private func missing(_ token: String) async throws -> APIError {
        if await hub.isRetired(token) != nil {
            return APIError(.gone, code: "unregistered", "token was rotated or deleted")
        }
        return APIError(.notFound, code: "unknown_token", "no device has this token")
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
