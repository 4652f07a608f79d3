import Foundation

/// A `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` address (`postgresql://` too), as libpq writes them.
/// Percent-escapes in the user and password are decoded. The only query parameter understood is
/// `sslmode=disable|prefer|require` (default `prefer`, as libpq's).
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    public var sslMode: String

    /// Why a `--database` URL was refused.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses `text`; throws with what is wrong.
    public init(_ text: String) throws(Invalid) {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
              scheme == "postgres" || scheme == "postgresql" else {
            throw Invalid(description: "'\(Self.redacted(text))' is not a postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE URL")
        }
        guard let user = components.percentEncodedUser.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw Invalid(description: "the PostgreSQL URL names no user (postgres://USER@HOST/DATABASE)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw Invalid(description: "the PostgreSQL URL names no host")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw Invalid(description: "the PostgreSQL URL names no database (…/DATABASE at its end)")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw Invalid(description: "the PostgreSQL port \(port) is out of range") }
        var sslMode = "prefer"
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("sslmode", let value?) where ["disable", "prefer", "require"].contains(value):
                sslMode = value
            case ("sslmode", _):
                throw Invalid(description: "sslmode must be disable, prefer or require")
            default:
                throw Invalid(description: "the PostgreSQL URL parameter '\(item.name)' is not supported (only sslmode)")
            }
        }
        self.user = user
        self.password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        self.host = host
        self.port = port
        self.database = database
        self.sslMode = sslMode
    }

    /// The URL without its password (for logs and `/__admin/info`).
    public var description: String { "postgres://\(user)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)" }

    private static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].firstIndex(of: "@"),
              let colon = text[schemeEnd.upperBound..<at].firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
