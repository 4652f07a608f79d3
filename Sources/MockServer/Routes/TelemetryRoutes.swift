import Foundation
import Hummingbird
import ServerSupport
import SurveyWire
import Transport

/// Glean-style ping ingestion (PROTOCOL.md §1.5 and §8), de-duplicated by document id. A ping without a client id
/// is stored with an empty one (listed without `client_id`, left out of the gap report).
struct TelemetryRoutes: Sendable {
    let context: ServerContext
    /// The telemetry part of the store.
    var store: any TelemetryStore { context.store }

    func add(to router: Router<BasicRequestContext>) {
        router.post("/submit/{app_id}/{ping}/{schema}/{document_id}") { request, ctx in
            try await submit(request, ctx)
        }
    }

    func submit(_ request: Request, _ ctx: BasicRequestContext) async throws -> Response {
        let appID = try ctx.parameters.require("app_id")
        let ping = try ctx.parameters.require("ping")
        let schema = try ctx.parameters.require("schema")
        let documentID = try ctx.parameters.require("document_id")
        let limit = context.configuration.maxBodyBytes
        var bytes = try await request.collectBody(limit: limit)
        if request.headers[.contentEncoding]?.lowercased() == "gzip" {
            do {
                bytes = try Gzip.decompress(bytes, limit: limit)
            } catch {
                if error.code == "too_large" {
                    throw APIError(.contentTooLarge, code: "payload_too_large", "the ping is larger than \(limit) bytes after decompression")
                }
                throw APIError(.badRequest, code: "invalid_gzip", "the body is not valid gzip")
            }
        }
        let parsed = try Request.decodeChecked(TelemetryPing.self, bytes)
        let body = String(decoding: bytes, as: UTF8.self)
        let now = context.realNow().timeIntervalSince1970
        let record = TelemetryRecord(seq: nil, documentId: documentID, appId: appID, ping: ping, schemaVersion: schema,
                                     clientId: parsed.clientInfo.clientID ?? "", receivedAt: now, body: body)
        // Unauthenticated: bounded in total. Past the quota, 507 (a 5xx: Glean keeps the ping and retries later).
        let size = bytes.count
        guard context.telemetryBytes.reserve(size) else {
            throw APIError(.init(code: 507, reasonPhrase: "Insufficient Storage"), code: "telemetry_storage_full",
                           "the server keeps at most \(context.telemetryBytes.limit) bytes of telemetry; try again later")
        }
        do {
            let stored = try await store.insertPing(record)
            if !stored { context.telemetryBytes.release(size) }
        } catch {
            context.telemetryBytes.release(size)
            throw error
        }
        return JSONResponse.empty(.ok)
    }
}
