import ArgumentParser
import Foundation
import Logging
import MockServer
import ServerSupport

/// `mock-server`: the Beiwe-compatible mock study server as a process.
@main
struct MockServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-server",
        abstract: "Beiwe-compatible mock study server. Prints one READY line to stdout once it accepts connections.",
        discussion: """
            APIs: Beiwe's mobile API (POST /register_user, /upload, ...), telemetry (POST /submit/...), features (GET /features/...) \
            and the admin API under /__admin. The OpenAPI 3.1 reference of every route is served at GET /__admin/openapi.json \
            (and kept in docs/openapi/mock-server.json); GET /__admin/requests lists the last requests answered.
            """,
        version: "mock-server \(MockServer.version)")

    @Option(help: "Address to bind. Anything but loopback needs --admin-token.") var host = "127.0.0.1"
    @Option(help: "Port to bind (0 = any free port).") var port = 0
    @Option(help: "Base URL of a push relay, e.g. http://127.0.0.1:9000. Repeat for several relays: each push goes to the one whose node id (push-relay --node-id) its token carries.")
    var relayURL: [String] = []
    @Option(help: "SQLite file, :memory:, or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require&pool_max_conns=N] (several instances may share one PostgreSQL database; 8 connections each by default). Default: mock-server.sqlite in --data-dir.")
    var database: String?
    @Option(help: "Directory for the default database file.") var dataDir = "./.mock-server-data"
    @Option(help: "PBKDF2 iterations for stored passwords.") var kdfIterations = 1000
    @Option(help: "Bearer token required on /__admin.") var adminToken: String?
    @Option(help: "Seconds between scheduler checks of real-time studies.") var tick = 1.0
    @Option(help: "Failed password checks one participant may have per minute; more answer 429 until the minute is over (default: no limit).")
    var maxFailedLogins: Int?
    @Option(help: "Bytes of telemetry kept at most; past it /submit answers 507 and clients keep their pings.") var maxTelemetryBytes = 512 << 20
    @Option(help: "strict (helpful refusals) or beiwe (answer as the real Beiwe server does: no scheduling key, fcm_token ignored at registration, HTML content types and error pages).")
    var profile = "strict"
    @Option(help: "With --profile beiwe: a Google service-account JSON whose key signs the FCM v1 token requests (default: one fetched from each relay).")
    var fcmServiceAccount: String?
    @Option(help: "Seconds an idle connection (no request under way) is kept open.") var idleTimeout = 60.0
    @Option(help: "Seconds a request may take to arrive whole (headers and body); then 408 and close.") var requestTimeout = 10.0
    @Option(help: "Requests one connection may pipeline without reading the answers; more close it.") var maxPipelined = 32
    @Option(help: "Stop when the process with this pid is gone.") var parentPid: Int32?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        guard (1...10_000_000).contains(kdfIterations) else { throw ValidationError("--kdf-iterations must be 1-10000000") }
        guard tick > 0, tick <= 3600 else { throw ValidationError("--tick must be > 0 and <= 3600 seconds") }
        if let maxFailedLogins { guard (1...1_000_000).contains(maxFailedLogins) else { throw ValidationError("--max-failed-logins must be 1-1000000") } }
        guard maxTelemetryBytes >= 1 << 20 else { throw ValidationError("--max-telemetry-bytes must be at least 1048576") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        try ConnectionLimits.validate(idleTimeout: idleTimeout, requestTimeout: requestTimeout, maxPipelined: maxPipelined)
        guard ServerProfile(rawValue: profile) != nil else { throw ValidationError("--profile must be strict or beiwe") }
        if fcmServiceAccount != nil, profile != "beiwe" { throw ValidationError("--fcm-service-account needs --profile beiwe") }
        guard HostName.isLoopbackBind(host) || adminToken != nil else {
            throw ValidationError("binding \(host) exposes the admin API beyond loopback; pass --admin-token")
        }
        if let database {
            do { _ = try StoreLocation(argument: database) } catch { throw ValidationError("--database: \(error)") }
        }
        for url in relayURL where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--relay-url must start with http:// or https://")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { EscapingLogHandler(StreamLogHandler.standardError(label: $0)) }
        var logger = Logger(label: "mock-server")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let location = try StoreLocation(argument: database ?? "\(dataDir)/mock-server.sqlite")
        let configuration = MockServerConfiguration(
            store: location, kdfIterations: kdfIterations,
            adminToken: adminToken, tickInterval: .milliseconds(Int(tick * 1000)), maxFailedLogins: maxFailedLogins,
            maxTelemetryBytes: maxTelemetryBytes, profile: ServerProfile(rawValue: profile) ?? .strict,
            relayURLs: relayURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }, fcmServiceAccountFile: fcmServiceAccount)
        let server: MockServer
        do {
            server = try await MockServer(configuration: configuration, logger: logger)
        } catch let error as MockServerStartError {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(2)
        } catch {
            logger.critical("cannot open the database", metadata: ["database": "\(location)", "error": "\(error)"])
            throw ExitCode(2)
        }
        try await server.run(options: LaunchOptions(serviceName: "mock-server", host: host, port: port, parentPID: parentPid,
                                                    connections: ConnectionLimits(seconds: idleTimeout, requestTimeout, maxPipelined: maxPipelined)))
    }
}
