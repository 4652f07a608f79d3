import ArgumentParser
import Foundation
import SurveyWire
import TrioTesting

/// `survey-cli up`: starts both servers as child processes and prints one READY line.
struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start mock-server and push-relay, print one READY line with both URLs, stop both on SIGTERM/SIGINT.")

    @Option(help: "Directory for the SQLite file and the servers' logs.") var dataDir = "./.survey-trio"
    @Option(help: "SQLite file, or :memory:. Default: mock-server.sqlite in --data-dir.") var database: String?
    @Option(help: "Relay keepalive seconds.") var keepalive = 25.0

    func run() async throws {
        let signals = SignalWaiter([SIGTERM, SIGINT])
        let dir = URL(fileURLWithPath: dataDir)
        let trio = try await Trio.start(.init(database: database ?? dir.appendingPathComponent("mock-server.sqlite").path,
                                              keepaliveSeconds: keepalive, logDirectory: dir))
        let line = ReadyLine(service: "survey-cli", url: trio.server.url, pid: Int(getpid()),
                             mockServer: trio.server.url, pushRelay: trio.relay.url).line()
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        let reason = await signals.waitOrChildExit(trio)
        await trio.stop()
        if reason == .childExited { throw ExitCode(1) }
    }
}

/// Waits for a signal, or for either child to exit. Keep it alive while waiting: it owns the signal sources.
final class SignalWaiter {
    enum Reason: Sendable { case signal, childExited }
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

    /// Waits for a signal, or until `limit` has passed (nil: no limit). True when a signal came.
    func wait(upTo limit: Duration?) async -> Bool {
        let stream = self.stream
        let signalled = await withTaskGroup(of: Bool.self) { group in
            group.addTask { for await _ in stream { return true }; return true }
            if let limit {
                group.addTask {
                    try? await Task.sleep(for: limit)
                    return false
                }
            }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        withExtendedLifetime(sources) {}
        return signalled
    }

    func waitOrChildExit(_ trio: Trio) async -> Reason {
        let stream = self.stream
        let reason = await withTaskGroup(of: Reason.self) { group in
            group.addTask { for await _ in stream { return .signal }; return .signal }
            group.addTask {
                while trio.server.isRunning && trio.relay.isRunning && !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return Task.isCancelled ? .signal : .childExited
            }
            let first = await group.next() ?? .signal
            group.cancelAll()
            return first
        }
        withExtendedLifetime(sources) {}
        return reason
    }
}
