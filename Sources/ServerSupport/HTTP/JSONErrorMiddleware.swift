import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Makes every refusal a JSON error body (PROTOCOL.md §7): unknown paths 404 `not_found`, a known path with another
/// method 405 `method_not_allowed` with `Allow`, framework errors with their status, errors of pure modules that know
/// their API error, and anything unexpected 500 `internal_error` (logged, never with its details on the wire).
package struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTableBox
    let logger: Logger

    package init(routes: RouteTableBox, logger: Logger) {
        self.routes = routes
        self.logger = logger
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as any APIErrorConvertible {
            throw error.apiError
        } catch let error as HTTPError where error.status == .notFound && context.coreContext.endpointPath.value == "NotFound" {
            let allowed = routes.table.methods(for: request.uri.path)
            guard !allowed.isEmpty else {
                throw APIError(.notFound, code: "not_found", "no route \(request.method.rawValue) \(LogText.clip(request.uri.path, 200))")
            }
            var headers = HTTPFields()
            headers[.allow] = allowed.joined(separator: ", ")
            throw APIError(.methodNotAllowed, code: "method_not_allowed",
                           "\(LogText.clip(request.uri.path, 200)) answers \(allowed.joined(separator: ", ")), not \(request.method.rawValue)",
                           headers: headers)
        } catch let error as HTTPError {
            throw APIError(error.status, code: Self.code(for: error.status), error.body ?? error.status.reasonPhrase, headers: error.headers)
        } catch let error as any HTTPResponseError {
            // Errors with their own bodies (APNs and FCM shapes) stay as they are.
            throw error
        } catch is CancellationError {
            throw APIError(.serviceUnavailable, code: "cancelled", "the server is shutting down")
        } catch {
            logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            throw APIError(.internalServerError, code: "internal_error", "the server failed to answer this request; its log has the details")
        }
    }

    /// A snake_case code for a bare status.
    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: "bad_request"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 408: "request_timeout"
        case 413: "payload_too_large"
        case 414: "uri_too_long"
        case 415: "unsupported_media_type"
        case 429: "too_many_requests"
        case 431: "header_fields_too_large"
        default: status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "_")
        }
    }
}
