import Foundation
import Transport

/// The mock server and the push relay running as two child processes, wired together.
///
/// ```swift
/// try await Trio.with { trio in
///     let study = try await trio.admin.createStudy(.init(name: "S", scheduling: "server"))
///     ...
/// }
/// ```
public final class Trio: Sendable {
    /// Launch settings.
    public struct Options: Sendable {
        /// `:memory:` (default), a SQLite file path, or a `postgres://` URL. With `TRIO_TEST_STORE=postgres` (see
        /// ``TestPostgres``), the default becomes a new database on the `TRIO_TEST_POSTGRES` server.
        public var database: String
        /// Relay keepalive seconds.
        public var keepaliveSeconds: Double
        /// Extra mock-server arguments.
        public var serverArguments: [String]
        /// Extra push-relay arguments.
        public var relayArguments: [String]
        /// Directory for the children's stderr logs (a temporary one when nil).
        public var logDirectory: URL?
        /// Fixed ports (0: any free port, reported by the READY lines).
        public var serverPort: Int = 0
        /// The first relay's port (0: any free port).
        public var relayPort: Int = 0
        /// Relays to start (`--node-id` 0, 1, ...); the mock server gets every one as a `--relay-url` and sends each
        /// push to the relay that issued its token. `relayPort` applies to the first.
        public var relayCount: Int = 1

        /// Options with an in-memory database, 25 s relay keepalives and no extra arguments unless given.
        public init(database: String = ":memory:", keepaliveSeconds: Double = 25, serverArguments: [String] = [], relayArguments: [String] = [],
                    logDirectory: URL? = nil) {
            self.database = database
            self.keepaliveSeconds = keepaliveSeconds
            self.serverArguments = serverArguments
            self.relayArguments = relayArguments
            self.logDirectory = logDirectory
        }
    }

    /// The first relay (node id 0).
    public let relay: ServerProcess
    /// Every relay, by node id.
    public let relays: [ServerProcess]
    /// The mock server.
    public let server: ServerProcess
    /// Shared HTTP client for the admin and control clients.
    public let http: TransportClient
    /// A client of the mock server's admin API.
    public let admin: AdminClient
    /// A client of the first relay's control API.
    public let control: RelayControlClient

    private init(relays: [ServerProcess], server: ServerProcess, http: TransportClient) {
        self.relays = relays
        relay = relays[0]
        self.server = server
        self.http = http
        admin = AdminClient(baseURL: server.url, http: http)
        control = RelayControlClient(baseURL: relay.url, http: http)
    }

    /// Starts the relay, then the mock server pointed at it. Both stop on their own if this process dies.
    public static func start(_ options: Options = Options()) async throws -> Trio {
        let logs = options.logDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("trio-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let parent = String(getpid())
        let database = options.database == ":memory:" && TestPostgres.isDefaultStore ? try await TestPostgres.createDatabase() : options.database
        var relays: [ServerProcess] = []
        let server: ServerProcess
        do {
            for node in 0..<max(1, options.relayCount) {
                relays.append(try await ServerProcess.launch(
                    executable: try Executables.locate("push-relay"),
                    arguments: ["--port", String(node == 0 ? options.relayPort : 0), "--keepalive", String(options.keepaliveSeconds),
                                "--node-id", String(node), "--parent-pid", parent] + options.relayArguments,
                    logFile: logs.appendingPathComponent(node == 0 ? "push-relay.log" : "push-relay-\(node).log")))
            }
            server = try await ServerProcess.launch(
                executable: try Executables.locate("mock-server"),
                arguments: ["--port", String(options.serverPort)] + relays.flatMap { ["--relay-url", $0.url] }
                    + ["--database", database, "--parent-pid", parent] + options.serverArguments,
                logFile: logs.appendingPathComponent("mock-server.log"))
        } catch {
            for relay in relays { await relay.stop() }
            throw error
        }
        return Trio(relays: relays, server: server, http: TransportClient())
    }

    /// Stops both processes (SIGTERM, then SIGKILL after a grace period).
    public func stop() async {
        await server.stop()
        for relay in relays { await relay.stop() }
        http.shutdown()
    }

    /// Runs `body` with a started trio and always stops it, also when `body` throws.
    public static func with<T: Sendable>(_ options: Options = Options(), _ body: (Trio) async throws -> T) async throws -> T {
        let trio = try await start(options)
        do {
            let result = try await body(trio)
            await trio.stop()
            return result
        } catch {
            await trio.stop()
            throw error
        }
    }
}
