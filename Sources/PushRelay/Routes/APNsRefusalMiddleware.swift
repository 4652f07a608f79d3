import HTTPTypes
import Hummingbird
import ServerSupport
import SurveyWire

/// Answers the router's own refusals under APNs' `/3` as APNs does (PROTOCOL.md §9): a method other than POST on a
/// device path is 405 `{"reason": "MethodNotAllowed"}`, any other path 404 `{"reason": "BadPath"}`, where the rest of
/// the relay answers the project's `not_found` and `method_not_allowed` bodies. Placed outside ``JSONErrorMiddleware``,
/// whose refusals it reshapes; the route table stays what the API document lists.
struct APNsRefusalMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError where Self.isAPNsPath(request.uri.path) && (error.status == .notFound || error.status == .methodNotAllowed) {
            let reason = error.status == .notFound ? "BadPath" : "MethodNotAllowed"
            // The refusal's headers stay (a 405's `Allow`, which RFC 9110 requires).
            throw RawJSONError(error.status, body: RelayWire.APNsError(reason: reason), headers: error.headers)
        }
    }

    static func isAPNsPath(_ path: String) -> Bool {
        path == "/3" || path.hasPrefix("/3/")
    }
}
