import Foundation
import HTTPTypes
import Hummingbird

/// Guards a server's control plane (`/__admin` on the mock server, `/__control` on the relay) and, with a token,
/// `/metrics` (PROTOCOL.md §7):
/// - with a token: `Authorization: Bearer <token>` is required (401 `token_required` otherwise);
/// - `Host` must be a loopback name or the bound address (403 `foreign_host`), unless the request carries the token:
///   a web page cannot make a browser send a foreign `Host` to a loopback server *and* the token (DNS rebinding);
/// - `Origin`, when present, must be the server's own (403 `foreign_origin`), again unless the token came with it (a
///   browser never adds `Authorization` by itself);
/// - a request with a body must say `Content-Type: application/json` (415 `unsupported_media_type`), so no
///   cross-origin "simple" request (`text/plain`, forms) reaches a handler.
package struct ControlPlaneGuard<Context: RequestContext>: RouterMiddleware {
    /// The guarded path prefix, `/__admin` or `/__control`.
    let prefix: String
    let token: String?
    let bound: BoundAddress

    package init(prefix: String, token: String?, bound: BoundAddress) {
        self.prefix = prefix
        self.token = token
        self.bound = bound
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let guarded = path == prefix || path.hasPrefix(prefix + "/")
        let metrics = path == "/metrics"
        guard guarded || (metrics && token != nil) else { return try await next(request, context) }
        if let problem = Self.check(method: request.method, authority: request.head.authority, origin: request.headers[.origin],
                                    authorization: request.headers[.authorization], contentType: request.headers[.contentType],
                                    hasBody: Self.hasBody(request.headers), token: token, boundURL: bound.url) {
            throw problem
        }
        return try await next(request, context)
    }

    static func hasBody(_ headers: HTTPFields) -> Bool {
        if let length = headers[.contentLength] { return length != "0" }
        return headers[.transferEncoding] != nil
    }

    /// The refusal for a request, or nil when it may pass. Pure, shared with the relay's own connection handler.
    package static func check(method: HTTPRequest.Method, authority: String?, origin: String?, authorization: String?,
                             contentType: String?, hasBody: Bool, token: String?, boundURL: String?) -> APIError? {
        let authorized = token.map { authorization == "Bearer \($0)" } ?? false
        if token != nil, !authorized {
            return APIError(.unauthorized, code: "token_required", "this API needs Authorization: Bearer <token>",
                            headers: [.wwwAuthenticate: "Bearer"])
        }
        if let authority, !authorized, !HostName.isLocal(authority: authority, boundURL: boundURL) {
            return APIError(.forbidden, code: "foreign_host", "Host '\(LogText.clip(authority, 100))' is neither a loopback name nor this server's address")
        }
        if let origin, !authorized, !HostName.isOwnOrigin(origin, authority: authority, boundURL: boundURL) {
            return APIError(.forbidden, code: "foreign_origin", "requests from origin '\(LogText.clip(origin, 100))' are refused")
        }
        if hasBody {
            let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" else {
                return APIError(.unsupportedMediaType, code: "unsupported_media_type", "a request body here must be Content-Type: application/json")
            }
        }
        return nil
    }
}

/// Which `Host` and `Origin` values name this server.
package enum HostName {
    /// The host part of an authority (`127.0.0.1:8080` → `127.0.0.1`, `[::1]:80` → `::1`), lowercased.
    static func host(ofAuthority authority: String) -> String {
        var text = Substring(authority.lowercased())
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return String(text) }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        return String(text)
    }

    /// True for `localhost` (and `*.localhost`), `127.0.0.0/8` and `::1`.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// True when binding `host` keeps a server on loopback (`127.x.x.x`, `localhost`, `::1`).
    package static func isLoopbackBind(_ host: String) -> Bool {
        isLoopback(host.lowercased())
    }

    /// A loopback name, or the host the server is bound to.
    package static func isLocal(authority: String, boundURL: String?) -> Bool {
        let host = host(ofAuthority: authority)
        if isLoopback(host) { return true }
        guard let boundURL, let boundHost = boundURL.split(separator: "/").dropFirst().first.map(String.init) else { return false }
        let bound = Self.host(ofAuthority: boundHost)
        return bound == host && bound != "0.0.0.0" && bound != "::"
    }

    /// `Origin` is this server's own: `http://` plus an authority that is local and equals the request's `Host`.
    static func isOwnOrigin(_ origin: String, authority: String?, boundURL: String?) -> Bool {
        let lowered = origin.lowercased()
        guard lowered.hasPrefix("http://") else { return false }
        let originAuthority = String(lowered.dropFirst("http://".count))
        guard isLocal(authority: originAuthority, boundURL: boundURL) else { return false }
        guard let authority else { return true }
        return originAuthority == authority.lowercased()
    }
}
