import Foundation

/// A `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` address (`postgresql://` too), as libpq writes them.
/// Percent-escapes in the user and password are decoded. Query parameters: `sslmode=disable|prefer|require` (default
/// `prefer`, as libpq's) and `pool_max_conns=N` (2–100, as pgx names it; default ``defaultPoolSize``).
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    public var sslMode: String
    /// Connections the instance's pool may open.
    public var poolSize: Int

    /// 8 connections per instance. On the 2-core box PostgreSQL shares, one run each of `load register` against one
    /// instance gave 916/s with 32 connections, 1,336/s with 16, 1,186/s with 8 and 1,180/s with 4; two instances of
    /// 16 each (32 backends) made 926–931/s against one's 1,101–1,159/s in three paired runs, and of 8 each 0.87–1.10
    /// of one: a backend past what the cores can run costs PostgreSQL context switches for no parallelism.
    public static let defaultPoolSize = 8

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
        var poolSize = Self.defaultPoolSize
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("sslmode", let value?) where ["disable", "prefer", "require"].contains(value):
                sslMode = value
            case ("sslmode", _):
                throw Invalid(description: "sslmode must be disable, prefer or require")
            case ("pool_max_conns", let value?) where Int(value).map({ (2...100).contains($0) }) == true:
                poolSize = Int(value)!
            case ("pool_max_conns", _):
                throw Invalid(description: "pool_max_conns must be a whole number from 2 to 100")
            default:
                throw Invalid(description: "the PostgreSQL URL parameter '\(item.name)' is not supported (sslmode, pool_max_conns)")
            }
        }
        self.user = user
        self.password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        self.host = host
        self.port = port
        self.database = database
        self.sslMode = sslMode
        self.poolSize = poolSize
    }

    /// The URL without its password (for logs and `/__admin/info`).
    public var description: String { "postgres://\(user)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)" }

    private static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].firstIndex(of: "@"),
              let colon = text[schemeEnd.upperBound..<at].firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
