import Foundation

/// A PostgreSQL server for tests, named by the environment:
/// - `TRIO_TEST_POSTGRES`: a `postgres://` URL of a database on a server where that user may create databases
///   (`scripts/postgres start` prints one for a private cluster);
/// - `TRIO_TEST_STORE=postgres`: every ``Trio`` started with the default database (`:memory:`) runs its mock server on
///   a new database of that server instead, so a whole suite runs on PostgreSQL without changing a test.
public enum TestPostgres {
    /// Why a database could not be made.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with what to do about it.
        public let description: String
    }

    /// `TRIO_TEST_POSTGRES`, when set.
    public static var serverURL: String? {
        ProcessInfo.processInfo.environment["TRIO_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether trios with the default database use PostgreSQL (`TRIO_TEST_STORE=postgres`).
    public static var isDefaultStore: Bool {
        ProcessInfo.processInfo.environment["TRIO_TEST_STORE"] == "postgres"
    }

    /// Creates a new, empty database on the `TRIO_TEST_POSTGRES` server (with `psql`, run by ``ChildProcess``, so no
    /// thread of Swift's pool waits for it) and returns its URL.
    public static func createDatabase(prefix: String = "trio") async throws -> String {
        guard let server = serverURL else {
            throw Failure(description: "TRIO_TEST_POSTGRES is not set: run `eval \"$(scripts/postgres start)\"` first (scripts/test does)")
        }
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        let psql = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                              ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", server, "-c", "CREATE DATABASE \(name)"])
        guard psql.status == 0 else {
            throw Failure(description: "psql could not create a database on \(server): \(psql.errors.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return databaseURL(server, name: name)
    }

    /// `server` with its database replaced by `name` (the query, such as `sslmode`, kept).
    static func databaseURL(_ server: String, name: String) -> String {
        guard var components = URLComponents(string: server) else { return server }
        components.path = "/" + name
        return components.string ?? server
    }
}
