import Foundation
import Hummingbird
import ServerSupport

/// How the mock server answers the mobile API (`mock-server --profile`).
///
/// - `strict` (default): helpful. Inputs the real Beiwe server fails on are refused with 400 and a code naming the field
///   (`field_too_long` for an `os_version` past 16 characters), errors carry the JSON body, and the registration answer
///   says how the study schedules (`scheduling`, `timezone`).
/// - `beiwe`: answers as the real Beiwe server does (`docs/DECISIONS.md`, "Server profiles"), so a client tested
///   against it meets what a real deployment does: no `scheduling` or `timezone` key, `fcm_token` ignored at
///   registration (only `/set_fcm_token` stores one), JSON sent as `text/html; charset=utf-8`, empty 400/401/403
///   bodies, 404 HTML pages for routes Beiwe lacks (`/features`, `/submit`, `/download_survey`,
///   `/confirm_notifications`), survey pushes shaped and authenticated as Beiwe's push task sends them (FCM v1 with a
///   service account's token), and 500 HTML pages where Beiwe fails: an `os_version` past 16 characters, the same
///   participant registering twice within one second.
public enum ServerProfile: String, Sendable, CaseIterable {
    case strict
    case beiwe

    /// Beiwe's app-version history column (`os_version`) holds 16 characters.
    static let osVersionLimit = 16

    /// The refusal for an `os_version` Beiwe cannot store, or nil.
    func checkOSVersion(_ value: String?) -> APIError? {
        guard let value, value.count > Self.osVersionLimit else { return nil }
        switch self {
        case .strict:
            return APIError(.badRequest, code: "field_too_long",
                            "os_version has \(value.count) characters; Beiwe stores at most \(Self.osVersionLimit), and the real server would answer 500",
                            field: "os_version")
        case .beiwe:
            return APIError(.internalServerError, code: "server_error", "AppVersionHistory.os_version: value too long")
        }
    }

    /// Beiwe's 500 page.
    static func serverErrorPage() -> Response {
        html(.internalServerError, "<!doctype html><html><head><title>Server Error (500)</title></head><body><h1>Server Error (500)</h1></body></html>")
    }

    /// Beiwe's 404 page for a route it does not have.
    static func notFoundPage(_ path: String) -> Response {
        html(.notFound, "<!DOCTYPE html><html lang=\"en\"><head><title>Page not found at \(LogText.clip(path, 100).replacingOccurrences(of: "<", with: "&lt;"))</title></head>"
             + "<body><h1>Page not found <span>(404)</span></h1></body></html>")
    }

    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// `--profile beiwe`: rewrites the mobile API's answers as the real server sends them (content type, empty error
/// bodies, HTML error pages) and answers 404 pages for the routes Beiwe does not have. The admin API is untouched.
struct BeiweProfileMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/__admin") || path == "/metrics" { return try await next(request, context) }
        if Self.beiweLacks(path) { return ServerProfile.notFoundPage(path) }
        do {
            return Self.asBeiwe(try await next(request, context))
        } catch let error as APIError {
            return Self.asBeiwe(error.makeResponse())
        } catch let error as any HTTPResponseError {
            return Self.asBeiwe(try error.response(from: request, context: context))
        }
    }

    /// The routes this server has and Beiwe does not: the feature and telemetry routes, and the per-survey fetch and
    /// push receipts of the mobile API (Beiwe's apps fetch `/download_surveys` after a push and report receipts in
    /// `notification_uuids` on any request).
    static func beiweLacks(_ path: String) -> Bool {
        if path.hasPrefix("/features/") || path.hasPrefix("/submit/") { return true }
        let first = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: true).first ?? ""
        return first == "download_survey" || first == "confirm_notifications"
    }

    static func asBeiwe(_ response: Response) -> Response {
        var response = response
        switch response.status.code {
        case 500...:
            return ServerProfile.serverErrorPage()
        case 400, 401, 403:
            // Django's `abort(400)` and the auth decorator answer with no body.
            return Response(status: response.status, headers: [.contentType: "text/html; charset=utf-8"])
        default:
            if response.headers[.contentType]?.hasPrefix("application/json") == true {
                response.headers[.contentType] = "text/html; charset=utf-8"
            }
            return response
        }
    }
}
