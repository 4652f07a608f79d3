import Foundation
import HTTPTypes
import Hummingbird
import SurveyWire

/// Records every request the router answers in a ``RequestJournal`` (outermost, so it sees the final status of
/// refusals too). The journal's own routes and the API document are left out: reading the journal does not fill it.
package struct RequestJournalMiddleware<Context: RequestContext>: RouterMiddleware {
    let journal: RequestJournal
    let prefix: String
    let subject: @Sendable (String) -> (participant: String?, token: String?)
    let study: @Sendable (String) -> String?

    /// - Parameters:
    ///   - prefix: the control plane's prefix (`/__admin`, `/__control`), whose journal and document routes are not journaled.
    ///   - subject: the participant or token a path names (e.g. `/__admin/participants/{id}`), when it names one.
    ///   - study: the study a path names (`/__admin/studies/{id}`), when it names one.
    package init(journal: RequestJournal, prefix: String, subject: @escaping @Sendable (String) -> (participant: String?, token: String?),
                 study: @escaping @Sendable (String) -> String? = { _ in nil }) {
        self.study = study
        self.journal = journal
        self.prefix = prefix
        self.subject = subject
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path == prefix + "/requests" || path == prefix + "/openapi.json" {
            return try await next(request, context)
        }
        let started = ContinuousClock.now
        let named = subject(path)
        let current = RequestJournal.Subject()
        current.participant = named.participant
        current.token = named.token
        current.study = study(path)
        let method = request.method.rawValue
        do {
            let response = try await RequestJournal.$current.withValue(current) { try await next(request, context) }
            journal.record(method: method, path: path, status: response.status.code, started: started,
                           participant: current.participant, token: current.token,
                           study: current.study)
            return response
        } catch let error as any HTTPResponseError {
            journal.record(method: method, path: path, status: error.status.code, started: started,
                           participant: current.participant, token: current.token,
                           study: current.study)
            throw error
        } catch {
            journal.record(method: method, path: path, status: 500, started: started, participant: current.participant, token: current.token,
                           study: current.study)
            throw error
        }
    }
}

/// The control plane's reference routes: `GET {prefix}/openapi.json` (the API document) and the request journal
/// (`GET {prefix}/requests?limit=&path=&status=&participant=&token=&study=&since=&wait=&min_count=`, `DELETE
/// {prefix}/requests`).
package enum ReferenceRoutes {
    package static func add<Context: RequestContext>(to router: Router<Context>, prefix: String, document: [UInt8], journal: RequestJournal) {
        router.get("\(prefix)/openapi.json") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: document)))
        }
        router.get("\(prefix)/requests") { request, _ -> Response in
            let query = try ListingQuery(request, allowed: ["limit", "path", "status", "participant", "token", "study", "since"])
            let limit = try query.integer("limit", in: 1...RequestJournal.maxLimit) ?? 100
            var filter = RequestJournal.Filter(pathPrefix: query["path"], participant: query["participant"], token: query["token"],
                                               study: query["study"])
            filter.status = try query.integer("status", in: 100...599)
            if let text = query["since"] {
                guard let since = WireTime.parse(text) else {
                    throw APIError(.badRequest, code: "invalid_field", "since must be an RFC 3339 time", field: "since")
                }
                filter.since = since
            }
            let entries = try await query.answer(changes: journal.changes) { journal.entries(limit: limit, filter) }
            return JSONResponse.make(RequestJournal.Listing(requests: entries))
        }
        router.delete("\(prefix)/requests") { _, _ -> Response in
            journal.clear()
            return JSONResponse.empty(.noContent)
        }
    }
}
