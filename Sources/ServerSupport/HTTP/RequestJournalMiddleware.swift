import Foundation
import HTTPTypes
import Hummingbird

/// Records every request the router answers in a ``RequestJournal`` (outermost, so it sees the final status of
/// refusals too). The journal's own routes and the API document are left out: reading the journal does not fill it.
package struct RequestJournalMiddleware<Context: RequestContext>: RouterMiddleware {
    let journal: RequestJournal
    let prefix: String
    let subject: @Sendable (String) -> (participant: String?, token: String?)

    /// - Parameters:
    ///   - prefix: the control plane's prefix (`/__admin`, `/__control`), whose journal and document routes are not journaled.
    ///   - subject: the participant or token a path names (e.g. `/__admin/participants/{id}`), when it names one.
    package init(journal: RequestJournal, prefix: String, subject: @escaping @Sendable (String) -> (participant: String?, token: String?)) {
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
        let method = request.method.rawValue
        do {
            let response = try await RequestJournal.$current.withValue(current) { try await next(request, context) }
            journal.record(method: method, path: path, status: response.status.code, started: started,
                           participant: current.participant, token: current.token)
            return response
        } catch let error as any HTTPResponseError {
            journal.record(method: method, path: path, status: error.status.code, started: started,
                           participant: current.participant, token: current.token)
            throw error
        } catch {
            journal.record(method: method, path: path, status: 500, started: started, participant: current.participant, token: current.token)
            throw error
        }
    }
}

/// The control plane's reference routes: `GET {prefix}/openapi.json` (the API document) and the request journal
/// (`GET {prefix}/requests?limit=&path=&status=`, `DELETE {prefix}/requests`).
package enum ReferenceRoutes {
    package static func add<Context: RequestContext>(to router: Router<Context>, prefix: String, document: [UInt8], journal: RequestJournal) {
        router.get("\(prefix)/openapi.json") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: document)))
        }
        router.get("\(prefix)/requests") { request, _ -> Response in
            let query = request.uri.queryParameters
            var limit = 100
            if let text = query["limit"].map(String.init) {
                guard let value = Int(text), (1...RequestJournal.maxLimit).contains(value) else {
                    throw APIError(.badRequest, code: "invalid_field", "limit must be an integer 1-\(RequestJournal.maxLimit)", field: "limit")
                }
                limit = value
            }
            var status: Int?
            if let text = query["status"].map(String.init) {
                guard let value = Int(text), (100...599).contains(value) else {
                    throw APIError(.badRequest, code: "invalid_field", "status must be an HTTP status 100-599", field: "status")
                }
                status = value
            }
            let path = query["path"].map(String.init)
            return JSONResponse.make(RequestJournal.Listing(requests: journal.entries(limit: limit, pathPrefix: path, status: status)))
        }
        router.delete("\(prefix)/requests") { _, _ -> Response in
            journal.clear()
            return JSONResponse.empty(.noContent)
        }
    }
}
