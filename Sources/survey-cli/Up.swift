import ArgumentParser
import Foundation
import ServerSupport
import SurveyWire
import TrioTesting

/// `survey-cli up`: starts both servers and the devices API as child processes and prints one READY line.
struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start mock-server, push-relay and the devices API, print one READY line with their URLs, stop them on SIGTERM/SIGINT.")

    @Option(help: "Directory for the SQLite file and the servers' logs.") var dataDir = "./.survey-trio"
    @Option(help: "SQLite file, :memory:, or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE. Default: mock-server.sqlite in --data-dir.")
    var database: String?
    @Option(help: "Relay keepalive seconds.") var keepalive = 25.0
    @Option(help: "Stop (and stop both servers) when the process with this pid is gone, e.g. the test runner's.") var parentPid: Int32?
    @Option(help: "Port for mock-server (0: any free port).") var serverPort = 0
    @Option(help: "Port for push-relay (0: any free port; the first relay's when there are several).") var relayPort = 0
    @Option(help: "Relays to start, with node ids 0..K-1; the mock server sends each push to the relay that issued its token. The READY line lists them all in push_relays.")
    var relays = 1
    @Option(help: "Port for the relay's TLS listener (0: any free port).") var tlsPort = 0
    @Option(help: "Port for the relay's HTTPS proxy (0: any free port).") var proxyPort = 0
    @Option(help: "Port for the devices API (0: any free port).") var devicesPort = 0
    @Option(help: "Address every process binds. Beyond loopback a token is required: --token, else $TRIO_TOKEN, else one is generated and printed in READY as \"token\".")
    var host = "127.0.0.1"
    @Option(help: "Bearer token for /__admin, /__control, /__devices and /metrics on every process (default: $TRIO_TOKEN; none on loopback).")
    var token: String?

    func validate() throws {
        for port in [serverPort, relayPort, tlsPort, proxyPort, devicesPort] where !(0...65535).contains(port) {
            throw ValidationError("ports must be 0-65535")
        }
        guard (1...64).contains(relays) else { throw ValidationError("--relays must be 1-64") }
        if relays > 1, tlsPort != 0 || proxyPort != 0 { throw ValidationError("--tls-port and --proxy-port need --relays 1 (every relay has its own)") }
        if let token, !Self.isValidToken(token) { throw ValidationError("--token must be non-empty, without spaces") }
        if let token = ProcessInfo.processInfo.environment["TRIO_TOKEN"], token != "", !Self.isValidToken(token) {
            throw ValidationError("TRIO_TOKEN must be non-empty, without spaces")
        }
    }

    static func isValidToken(_ token: String) -> Bool {
        !token.isEmpty && !token.contains(where: { $0.isWhitespace || !$0.isASCII })
    }

    /// The token every process takes: `--token`, else `$TRIO_TOKEN`, else (bound beyond loopback) 32 random bytes in hex,
    /// told only in the READY line; nil on loopback with neither.
    func effectiveToken() -> (token: String?, generated: Bool) {
        if let token { return (token, false) }
        if let token = ProcessInfo.processInfo.environment["TRIO_TOKEN"], token != "" { return (token, false) }
        guard !HostName.isLoopbackBind(host) else { return (nil, false) }
        var random = SystemRandomNumberGenerator()
        return ((0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &random)) }.joined(), true)
    }

    func run() async throws {
        let signals = SignalWaiter([SIGTERM, SIGINT])
        let dir = URL(fileURLWithPath: dataDir)
        var options = Trio.Options(database: database ?? dir.appendingPathComponent("mock-server.sqlite").path,
                                   keepaliveSeconds: keepalive, logDirectory: dir)
        options.serverPort = serverPort
        options.relayPort = relayPort
        options.relayCount = relays
        let (token, generated) = effectiveToken()
        options.serverArguments += ["--host", host]
        options.relayArguments += ["--host", host, "--tls-port", String(tlsPort), "--proxy-port", String(proxyPort)]
        if let token {
            options.serverArguments += ["--admin-token", token]
            options.relayArguments += ["--control-token", token]
        }
        let trio = try await Trio.start(options)
        // The devices API (`survey-cli devices serve`), a child like the servers, tied to this process.
        let devices: ServerProcess
        do {
            devices = try await ServerProcess.launch(
                executable: URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]),
                arguments: ["devices", "serve", "--server", trio.server.url, "--relay", trio.relay.url, "--host", host,
                            "--port", String(devicesPort),
                            "--data-dir", dir.appendingPathComponent("devices").path, "--parent-pid", String(getpid())]
                    + (token.map { ["--token", $0] } ?? []),
                logFile: dir.appendingPathComponent("survey-devices.log"))
        } catch {
            await trio.stop()
            throw error
        }
        var ready = ReadyLine(service: "survey-cli", url: trio.server.url, pid: Int(getpid()),
                              mockServer: trio.server.url, pushRelay: trio.relay.url,
                              pushRelays: relays > 1 ? trio.relays.map(\.url) : nil, tlsURL: trio.relay.ready.tlsURL,
                              devices: devices.url)
        ready.pushRelayProxy = trio.relay.ready.proxyURL
        // `survey-cli healthcheck` reads the URLs and the token from here (the container's HEALTHCHECK); owner-only, as
        // the token is in it. Stdout tells the token only when it was generated.
        let readyFile = dir.appendingPathComponent(Healthcheck.readyFileName)
        ready.token = token
        FileManager.default.createFile(atPath: readyFile.path, contents: Data((ready.line() + "\n").utf8),
                                       attributes: [.posixPermissions: 0o600])
        ready.token = generated ? token : nil
        FileHandle.standardOutput.write(Data((ready.line() + "\n").utf8))
        let reason = await signals.wait(upTo: nil, parentPID: parentPid,
                                        running: { trio.server.isRunning && trio.relays.allSatisfy(\.isRunning) && devices.isRunning })
        if reason == .childExited {
            // Say which one, how it ended and what it said last, then stop the others.
            let children = [("mock-server", trio.server), ("survey-devices", devices)]
                + trio.relays.enumerated().map { ("push-relay \($0.offset)", $0.element) }
            for (name, child) in children where !child.isRunning {
                let tail = child.logs().split(separator: "\n", omittingEmptySubsequences: false).suffix(20).joined(separator: "\n")
                FileHandle.standardError.write(Data("survey-cli up: \(name) exited with status \(child.terminationStatus); its last log lines:\n\(tail)\n".utf8))
            }
        }
        _ = await devices.stop()
        await trio.stop()
        try? FileManager.default.removeItem(at: readyFile)
        if reason == .childExited { throw ExitCode(1) }
    }
}

/// Waits for a signal, or for whatever else ends a command (a time limit, a parent, a child). Keep it alive while waiting:
/// it owns the signal sources.
final class SignalWaiter {
    private let stream: AsyncStream<Int32>
    private var sources: [any DispatchSourceSignal] = []

    init(_ signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        for sig in signals {
            // Dispatch delivers ignored signals to its sources; the default action would kill us first.
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { continuation.yield(sig) }
            source.resume()
            sources.append(source)
        }
    }

    /// Polls process `pid` every 200 ms: true once it is gone, false when the calling task was cancelled first.
    static func untilGone(_ pid: Int32) async -> Bool {
        while !Task.isCancelled {
            if kill(pid, 0) != 0 && errno == ESRCH { return true }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    /// Why ``wait(upTo:parentPID:done:running:)`` returned.
    enum End: Sendable, Equatable { case signal, timeout, parentGone, done, childExited }

    /// Waits for a signal, `limit` (nil: none), the end of process `parentPID`, an element of `done`, or `running`
    /// turning false (polled every 200 ms: `up`'s children).
    func wait(upTo limit: Duration?, parentPID: Int32?, done: AsyncStream<Void>? = nil,
              running: (@Sendable () -> Bool)? = nil) async -> End {
        let stream = self.stream
        let end = await withTaskGroup(of: End.self) { group in
            group.addTask { for await _ in stream { return .signal }; return .signal }
            if let limit {
                group.addTask {
                    try? await Task.sleep(for: limit)
                    return .timeout
                }
            }
            if let parentPID {
                group.addTask { await Self.untilGone(parentPID) ? .parentGone : .signal }
            }
            if let done {
                group.addTask {
                    for await _ in done { return .done }
                    return .signal
                }
            }
            if let running {
                group.addTask {
                    while running() && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(200)) }
                    return Task.isCancelled ? .signal : .childExited
                }
            }
            let first = await group.next() ?? .signal
            group.cancelAll()
            return first
        }
        withExtendedLifetime(sources) {}
        return end
    }
}
