import ArgumentParser
import Logging
import PushRelay
import SurveyWire
import ServerSupport

/// `push-relay`: the simulated APNs/FCM relay as a process.
@main
struct PushRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push-relay",
        abstract: "Simulated APNs/FCM push relay. Prints one READY line to stdout once it accepts connections.",
        discussion: """
            APIs: the provider API (APNs-style POST /3/device/{token}; FCM v1 POST /v1/projects/{project}/messages:send with its \
            OAuth2 token endpoint POST /token and topic subscriptions), the \
            device link (/v1/devices...) and the control API under /__control. The OpenAPI 3.1 reference of every route is served \
            at GET /__control/openapi.json (and kept in docs/openapi/push-relay.json); GET /__control/requests lists the last \
            requests answered.
            """,
        version: "push-relay \(PushRelayServer.version)")

    @Option(help: "Address to bind. Anything but loopback needs --control-token.") var host = "127.0.0.1"
    @Option(help: "Port to bind (0 = any free port).") var port = 0
    @Option(help: "Seconds between keepalive comments on idle device streams.") var keepalive = 25.0
    @Option(help: "Pushes per second one device may receive; more answer 429 (TooManyRequests / QUOTA_EXCEEDED).") var deviceRate: Double?
    @Option(help: "Seconds a rotated or deleted token keeps answering 200 (and dropping) before 410, as APNs reports uninstalls late.")
    var unregisteredLag = 0.0
    @Option(help: "Unacked messages in flight per device while a backlog drains after a (re)connect.") var ackBatch = 10
    @Option(help: "Keep devices and pending messages in this SQLite file, so a restart loses nothing (default: memory only).")
    var store: String?
    @Option(help: "Bearer token required on /__control and /metrics.") var controlToken: String?
    @Option(help: "This relay's node id (0-4095), carried by every token it issues: a mock server given several --relay-url sends each push to the relay whose id its token carries.")
    var nodeId = 0
    @Option(help: "Seconds an idle connection (no request under way) is kept open.") var idleTimeout = 60.0
    @Option(help: "Seconds a request may take to arrive whole (headers and body); then 408 and close.") var requestTimeout = 10.0
    @Option(help: "Requests one connection may pipeline without reading the answers; more close it.") var maxPipelined = 32
    @Option(help: "Provider credentials: lenient (a request without any is accepted; wrong ones are refused) or strict (FCM needs a bearer token from POST /token, as the real services).")
    var providerAuth = "lenient"
    @Option(help: "Port of the provider API over TLS with HTTP/2, as APNs serves it (0 = any free port; none = off). The READY line gives its URL as tls_url.")
    var tlsPort = "0"
    @Option(help: "Port of the HTTPS proxy for the push providers' hosts (CONNECT to fcm.googleapis.com, oauth2.googleapis.com, iid.googleapis.com, api.push.apple.com, ...: answered here, nothing forwarded; 0 = any free port; none = off). The READY line gives its URL as proxy_url.")
    var proxyPort = "0"
    @Option(help: "PEM certificate (chain) for the TLS port (default: one from a CA made at start, served at GET /__control/tls/ca.pem).")
    var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert.") var tlsKey: String?
    @Option(help: "Stop when the process with this pid is gone.") var parentPid: Int32?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"
    @Flag(help: "Print the APNs and FCM tables the relay answers by (JSON: each row, and where the relay differs) and exit.")
    var conformance = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        guard keepalive > 0, keepalive <= 25 else { throw ValidationError("--keepalive must be > 0 and <= 25 seconds") }
        if let deviceRate { guard deviceRate > 0 else { throw ValidationError("--device-rate must be positive") } }
        guard unregisteredLag >= 0, unregisteredLag <= 86_400 else { throw ValidationError("--unregistered-lag must be 0-86400 seconds") }
        guard (1...1000).contains(ackBatch) else { throw ValidationError("--ack-batch must be 1-1000") }
        guard RelayNode.range.contains(nodeId) else { throw ValidationError("--node-id must be 0-4095") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard ProviderAuthMode(rawValue: providerAuth) != nil else { throw ValidationError("--provider-auth must be lenient or strict") }
        guard tlsPort == "none" || Int(tlsPort).map({ (0...65535).contains($0) }) == true else {
            throw ValidationError("--tls-port must be 0-65535 or none")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard proxyPort == "none" || Int(proxyPort).map({ (0...65535).contains($0) }) == true else {
            throw ValidationError("--proxy-port must be 0-65535 or none")
        }
        guard HostName.isLoopbackBind(host) || controlToken != nil else {
            throw ValidationError("binding \(host) exposes the control API beyond loopback; pass --control-token")
        }
        try ConnectionLimits.validate(idleTimeout: idleTimeout, requestTimeout: requestTimeout, maxPipelined: maxPipelined)
    }

    func run() async throws {
        if conformance {
            print(String(decoding: ConformanceTables.json.compactBytes, as: UTF8.self))
            return
        }
        LoggingSystem.bootstrap { EscapingLogHandler(StreamLogHandler.standardError(label: $0)) }
        var logger = Logger(label: "push-relay")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var configuration = RelayConfiguration(
            keepaliveInterval: .milliseconds(Int(keepalive * 1000)), deviceRate: deviceRate,
            unregisteredLag: .milliseconds(Int(unregisteredLag * 1000)), ackBatch: ackBatch, controlToken: controlToken,
            connections: ConnectionLimits(seconds: idleTimeout, requestTimeout, maxPipelined: maxPipelined))
        configuration.nodeID = nodeId
        configuration.providerAuth = ProviderAuthMode(rawValue: providerAuth) ?? .lenient
        configuration.tlsPort = Int(tlsPort)
        // The proxy issues each host's certificate from the CA made at start: none with --tls-cert, nor without TLS.
        configuration.proxyPort = tlsCert == nil ? Int(proxyPort) : nil
        configuration.tlsHost = host
        if let tlsCert, let tlsKey { configuration.tlsFiles = .init(certificate: tlsCert, key: tlsKey) }
        let relay: PushRelayServer
        do {
            relay = try PushRelayServer(configuration: configuration, storePath: store)
        } catch {
            logger.critical("cannot start: \(error) (--store \(store ?? "none"), --tls-cert \(tlsCert ?? "none"))")
            throw ExitCode(1)
        }
        try await relay.run(options: LaunchOptions(serviceName: "push-relay", host: host, port: port, parentPID: parentPid), logger: logger)
    }
}
