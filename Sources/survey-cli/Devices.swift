import ArgumentParser
import DeviceHost
import Foundation
import Logging
import ServerSupport

/// `survey-cli devices ...`: many simulated devices in one process, driven over HTTP.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Host many simulated devices in one process, driven over HTTP (the /__devices API).",
        subcommands: [DevicesServe.self])
}

struct DevicesServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the devices API; print one READY line; stop every device on SIGTERM/SIGINT.",
        discussion: """
            POST /__devices registers a device and starts it listening; GET /__devices/{id}/events?after=SEQ&wait=5s&until=EVENT \
            waits for its events; POST /__devices/{id}/answers answers a survey; GET /__devices/health answers \
            {"status": "ok"}. The API is described at GET /__devices/openapi.json (docs/openapi/survey-devices.json).
            """)
    @Option(help: "Study server URL every device registers with.") var server: String
    @Option(help: "Push relay URL (optional: without it devices schedule surveys themselves and poll /download_surveys).")
    var relay: String?
    @Option(help: "Address to bind (anything but loopback needs --token).") var host = "127.0.0.1"
    @Option(help: "Port (0: any free port).") var port = 0
    @Option(help: "Bearer token every /__devices request must carry (Authorization: Bearer T); required off loopback.")
    var token: String?
    @Option(help: "Directory holding one directory per device.") var dataDir = "./.survey-devices"
    @Option(help: "Stop when the process with this pid is gone (e.g. the test runner's).") var parentPid: Int32?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "warning"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        for url in [server] + (relay.map { [$0] } ?? []) where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--server and --relay must start with http:// or https://")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        if !HostName.isLoopbackBind(host) && (token ?? "").isEmpty {
            throw ValidationError("--host \(host) is not loopback: the devices API would be open to the network; give --token")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "survey-devices")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        func trimmed(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
        // Each running device holds descriptors: the fleet keeps no more devices than the limit allows.
        let capacity = DescriptorBudget.devices(descriptors: DescriptorBudget.raiseSoftLimit())
        let fleet = DeviceFleet(serverURL: trimmed(server), relayURL: relay.map(trimmed), dataDirectory: URL(fileURLWithPath: dataDir),
                                logger: logger, capacity: capacity)
        try await DeviceServer(fleet: fleet, logger: logger).run(host: host, port: port, parentPID: parentPid, token: token)
    }
}
