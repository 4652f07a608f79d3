import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import SurveyWire

/// The control API (PROTOCOL.md §5) that tests use to inspect and steer the relay.
struct ControlRoutes {
    let hub: RelayHub
    let fcmAuth: FCMAuth
    let apnsAuth: APNsAuth
    let bound: BoundAddress
    /// The CA of the TLS port's certificate, when the relay made it.
    let caPEM: String?
    /// The request journal, whose changes wake a waiting trace listing.
    let journal: RequestJournal

    /// `PUT /__control/apns/keys/{kid}`: an APNs signing key's PEM (public, or the `.p8` private key).
    struct APNsKey: Codable { var publicKey: String; enum CodingKeys: String, CodingKey { case publicKey = "public_key" } }

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
        // `GET /__control/health` is answered by `RelayConnection` on the plain port's event loop, before the router;
        // this route answers it on the TLS port.
        router.get("/__control/health") { _, _ -> Response in
            JSONResponse.make(data: Data(RelayConnection.healthBody(node: hub.nodeID).utf8))
        }
        router.get("/__control/stats") { _, _ -> Response in JSONResponse.make(await hub.stats()) }
        router.get("/__control/tls/ca.pem") { _, _ -> Response in
            guard let caPEM else {
                throw APIError(.notFound, code: "no_ca", "this relay made no CA (--tls-port none, or --tls-cert given)")
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/x-pem-file"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: caPEM)))
        }
        router.put("/__control/apns/keys/{kid}") { request, context -> Response in
            let kid = try context.parameters.require("kid")
            guard (1...64).contains(kid.utf8.count) else { throw APIError(.badRequest, code: "invalid_field", "kid must be 1-64 characters", field: "kid") }
            let body = try await request.decodeJSON(APNsKey.self)
            do {
                try apnsAuth.register(kid: kid, pem: body.publicKey)
            } catch {
                throw APIError(.badRequest, code: "invalid_field", "public_key is not a PEM P-256 key (public, or the .p8 private key)", field: "public_key")
            }
            return JSONResponse.empty(.noContent)
        }
        // A service account for firebase-admin and Google's other Admin SDKs: a fresh key, `token_uri` the relay's.
        router.get("/__control/fcm/service-account.json") { request, _ -> Response in
            let project = request.uri.queryParameters["project_id"].map(String.init) ?? "survey-trio"
            guard (1...100).contains(project.utf8.count),
                  project.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                                            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw APIError(.badRequest, code: "invalid_field", "project_id must be 1-100 letters, digits, '-', '_' or '.'", field: "project_id")
            }
            // `token_uri=google`: Google's own token URI, for a backend that reaches the relay through its proxy.
            let tokenURI: String
            switch request.uri.queryParameters["token_uri"].map(String.init) {
            case nil: tokenURI = (bound.url ?? "http://127.0.0.1") + "/token"
            case "google": tokenURI = "https://oauth2.googleapis.com/token"
            case let other?:
                throw APIError(.badRequest, code: "invalid_field", "token_uri takes google (or is left out), not '\(LogText.clip(other, 40))'", field: "token_uri")
            }
            let account = try fcmAuth.makeServiceAccount(projectID: project, tokenURI: tokenURI)
            return JSONResponse.make(data: Data(account.compactBytes))
        }
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
            // `wait`/`min_count` (PROTOCOL.md §8): deliveries happen on streams, acks and sends are requests; both are
            // seen (the journal's changes wake the wait, the recheck sees the rest).
            let query = try ListingQuery(request, allowed: ["token", "event"])
            let token = query["token"], event = query["event"]
            let entries = try await query.answer(changes: journal.changes) {
                let all = await hub.traceEntries(token: token)
                return event.map { name in all.filter { $0.event == name } } ?? all
            }
            return JSONResponse.make(entries)
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
