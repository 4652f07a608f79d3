import Foundation
import GRDB
import Hummingbird
import ServerSupport
import SurveyWire
import Transport

/// Glean-style ping ingestion (PROTOCOL.md §1.5), de-duplicated by document id.
struct TelemetryRoutes: Sendable {
    let context: ServerContext

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
        let parsed: TelemetryPing
        do {
            parsed = try JSONDecoder().decode(TelemetryPing.self, from: Data(bytes))
        } catch {
            throw APIError.invalidJSON(error)
        }
        let body = String(decoding: bytes, as: UTF8.self)
        let now = context.realNow().timeIntervalSince1970
        let record = TelemetryRecord(seq: nil, documentId: documentID, appId: appID, ping: ping, schemaVersion: schema,
                                     clientId: parsed.clientInfo.clientID, receivedAt: now, body: body)
        try await context.store.write { db in try record.insert(db, onConflict: .ignore) }
        return JSONResponse.empty(.ok)
    }
}
