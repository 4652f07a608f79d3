import Foundation
import Hummingbird
import ServerSupport
import SurveyWire

/// The control API (PROTOCOL.md §5) that tests use to inspect and steer the relay.
struct ControlRoutes {
    let hub: RelayHub

    struct Reachability: Codable { var reachable: Bool }
    struct ClockAdvance: Codable, RangeChecked {
        var advanceSeconds: Int64
        enum CodingKeys: String, CodingKey { case advanceSeconds = "advance_seconds" }
        func checkRanges() throws(WireRangeError) {
            try WireRangeError.check(advanceSeconds, in: WireLimits.relayClockAdvanceSeconds, "advance_seconds")
        }
    }
    struct ClockNow: Codable { var now: String }

    func add(to router: Router<BasicRequestContext>) {
        // `GET /__control/health` is answered by `RelayConnection` on the connection's event loop, before the router.
        router.get("/__control/stats") { _, _ -> Response in JSONResponse.make(await hub.stats()) }
        router.get("/__control/devices/{token}") { _, context -> Response in
            let token = try context.parameters.require("token")
            guard let view = await hub.view(token: token) else { throw APIError(.notFound, code: "unknown_token", "no device has this token") }
            return JSONResponse.make(view)
        }
        router.put("/__control/devices/{token}") { request, context -> Response in
            let token = try context.parameters.require("token")
            let body = try await request.decodeJSON(Reachability.self)
            guard await hub.setReachable(token: token, reachable: body.reachable) else {
                throw APIError(.notFound, code: "unknown_token", "no device has this token")
            }
            try await hub.committed()
            return JSONResponse.make(await hub.view(token: token))
        }
        router.put("/__control/faults") { request, _ -> Response in
            let body = try await request.decodeJSON(RelayWire.Faults.self, allowedKeys: RelayWire.Faults.allowedKeys)
            if let problem = FaultState.validate(body) {
                throw APIError(.badRequest, code: "invalid_field", problem.message, field: problem.field)
            }
            if let token = body.token, await hub.view(token: token) == nil {
                throw APIError(.notFound, code: "unknown_token", "no device has this token", field: "token")
            }
            await hub.setFaults(body)
            return JSONResponse.empty(.noContent)
        }
        router.get("/__control/trace") { request, _ -> Response in
            let token = request.uri.queryParameters["token"].map(String.init)
            return JSONResponse.make(await hub.traceEntries(token: token))
        }
        router.post("/__control/clock") { request, _ -> Response in
            let body = try await request.decodeJSON(ClockAdvance.self)

            let now = await hub.advanceClock(seconds: body.advanceSeconds)
            try await hub.committed()
            return JSONResponse.make(ClockNow(now: WireTime.format(Date(timeIntervalSince1970: Double(now) / 1000), milliseconds: true)))
        }
        router.post("/__control/reset") { _, _ -> Response in
            await hub.reset()
            try await hub.committed()
            return JSONResponse.empty(.noContent)
        }
    }
}
