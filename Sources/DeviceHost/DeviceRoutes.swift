import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServerSupport
import SurveyWire

/// The devices API (PROTOCOL.md §8) over a ``DeviceFleet``: create, list, read, stop, start and delete devices, read
/// their events with a long poll, and answer their surveys.
package struct DeviceRoutes: Sendable {
    /// The longest `wait` on events.
    static let maxWait: Duration = .seconds(60)
    /// The largest `after` taken (2^53: every seq a JSON number holds exactly).
    static let maxSeq = 1 << 53

    let fleet: DeviceFleet

    package init(fleet: DeviceFleet) {
        self.fleet = fleet
    }

    /// The router with every route (errors as the servers' JSON bodies), behind `guard` (the servers' control-plane
    /// guard on `/__devices`; nil only for a router no listener serves).
    package func makeRouter(logger: Logger, guard controlGuard: ControlPlaneGuard<BasicRequestContext>?) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let routes = RouteTableBox()
        router.add(middleware: JSONErrorMiddleware(routes: routes, logger: logger))
        if let controlGuard { router.add(middleware: controlGuard) }
        let fleet = self.fleet
        router.get("/__devices/openapi.json") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json)))
        }
        // What `survey-cli healthcheck` (the container's HEALTHCHECK) asks, every few seconds: nothing to build.
        router.get("/__devices/health") { _, _ in JSONResponse.make(["status": "ok"]) }
        router.post("/__devices") { request, _ -> Response in
            let body = try await request.decodeJSON(DeviceWire.Create.self, allowedKeys: DeviceWire.Create.allowedKeys)
            return JSONResponse.make(try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.create(body) }, status: .created)
        }
        router.get("/__devices") { request, _ -> Response in
            _ = try ListingQuery(request, allowed: [])
            return JSONResponse.make(try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.list() })
        }
        router.get("/__devices/{device_id}") { _, context -> Response in
            let id = try context.parameters.require("device_id")
            return JSONResponse.make(try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.view(id) })
        }
        router.delete("/__devices/{device_id}") { _, context -> Response in
            let id = try context.parameters.require("device_id")
            try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.delete(id) }
            return JSONResponse.empty(.noContent)
        }
        router.post("/__devices/{device_id}/stop") { _, context -> Response in
            let id = try context.parameters.require("device_id")
            return JSONResponse.make(try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.stop(id) })
        }
        router.post("/__devices/{device_id}/start") { _, context -> Response in
            let id = try context.parameters.require("device_id")
            return JSONResponse.make(try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.start(id) })
        }
        router.get("/__devices/{device_id}/events") { request, context -> Response in
            let id = try context.parameters.require("device_id")
            let query = try ListingQuery(request, allowed: ["after", "until"])
            // A seq: events are numbered from 1, one at a time, so no log comes near 2^53.
            let after = try query.integer("after", in: 0...Self.maxSeq) ?? 0
            let until = query["until"]
            let wait = query.wait ?? .zero
            return JSONResponse.make(try await Self.call { () async throws(DeviceFleet.Failure) in
                try await fleet.events(id, after: after, until: until, wait: wait)
            })
        }
        router.post("/__devices/{device_id}/answers") { request, context -> Response in
            let id = try context.parameters.require("device_id")
            let body = try await request.decodeJSON(DeviceWire.Answers.self, allowedKeys: ["survey_id", "answers"])
            try await Self.call { () async throws(DeviceFleet.Failure) in try await fleet.answer(id, body) }
            return JSONResponse.make(["survey_id": body.surveyID, "status": "uploaded"])
        }
        routes.set(RouteTable(router))
        return router
    }

    /// Runs a fleet call, turning its refusal into the API's error body.
    static func call<T: Sendable>(_ body: () async throws(DeviceFleet.Failure) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw APIError(HTTPResponse.Status(code: error.status), code: error.code, error.message)
        }
    }
}
