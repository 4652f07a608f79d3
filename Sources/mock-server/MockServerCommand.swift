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
        abstract: "Beiwe-compatible mock study server. Prints one READY line to stdout once it accepts connections.")

    @Option(help: "Address to bind. Anything but loopback needs --admin-token.") var host = "127.0.0.1"
    @Option(help: "Port to bind (0 = any free port).") var port = 0
    @Option(help: "Base URL of the push relay, e.g. http://127.0.0.1:9000.") var relayURL: String?
    @Option(help: "SQLite file, or :memory:. Default: mock-server.sqlite in --data-dir.") var database: String?
    @Option(help: "Directory for the default database file.") var dataDir = "./.mock-server-data"
    @Option(help: "PBKDF2 iterations for stored passwords.") var kdfIterations = 1000
    @Option(help: "Bearer token required on /__admin.") var adminToken: String?
    @Option(help: "Seconds between scheduler checks of real-time studies.") var tick = 1.0
    @Option(help: "Stop when the process with this pid is gone.") var parentPid: Int32?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        guard (1...10_000_000).contains(kdfIterations) else { throw ValidationError("--kdf-iterations must be 1-10000000") }
        guard tick > 0 else { throw ValidationError("--tick must be positive") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        let loopback = host == "127.0.0.1" || host == "localhost" || host == "::1"
        guard loopback || adminToken != nil else {
            throw ValidationError("binding \(host) exposes the admin API beyond loopback; pass --admin-token")
        }
        if let relayURL, !(relayURL.hasPrefix("http://") || relayURL.hasPrefix("https://")) {
            throw ValidationError("--relay-url must start with http:// or https://")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "mock-server")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let location = StoreLocation(argument: database ?? "\(dataDir)/mock-server.sqlite")
        let configuration = MockServerConfiguration(
            store: location, kdfIterations: kdfIterations, relayURL: relayURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 },
            adminToken: adminToken, tickInterval: .milliseconds(Int(tick * 1000)))
        let server: MockServer
        do {
            server = try MockServer(configuration: configuration, logger: logger)
        } catch {
            logger.critical("cannot open the database", metadata: ["database": "\(location)", "error": "\(error)"])
            throw ExitCode(2)
        }
        try await server.run(options: LaunchOptions(serviceName: "mock-server", host: host, port: port, parentPID: parentPid))
    }
}
