import Foundation
import Synchronization
import SurveyWire

/// A launch failure or timeout, with the child's stderr tail for diagnosis.
public struct LaunchError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public var message: String
    /// The last lines the child wrote to stderr.
    public var stderrTail: String
    /// The message, then the stderr tail.
    public var description: String { stderrTail.isEmpty ? message : "\(message)\n--- stderr ---\n\(stderrTail)" }
}

/// One server executable running as a child process, started with `--port 0` and known by its READY line.
public final class ServerProcess: Sendable {
    /// What the READY line said.
    public let ready: ReadyLine
    /// Where the child's stderr goes.
    public let logFile: URL
    private let process: ProcessBox

    /// `Process` is a class without Sendable; this box is safe because after launch it is only used to read
    /// `processIdentifier`/`isRunning` and to signal, which Foundation allows from any thread.
    private final class ProcessBox: @unchecked Sendable {
        let process: Process
        init(_ process: Process) { self.process = process }
    }

    /// The base URL (`http://127.0.0.1:PORT`).
    public var url: String { ready.url }
    /// The child's process id.
    public var pid: Int32 { process.process.processIdentifier }
    /// Whether the child is still running.
    public var isRunning: Bool { process.process.isRunning }

    private init(ready: ReadyLine, logFile: URL, process: ProcessBox) {
        self.ready = ready
        self.logFile = logFile
        self.process = process
    }

    /// Starts `executable` with `arguments` and waits (up to `timeout`) for its READY line.
    public static func launch(executable: URL, arguments: [String], logFile: URL, timeout: Duration = .seconds(60)) async throws -> ServerProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let stderr = try FileHandle(forWritingTo: logFile)
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw LaunchError(message: "cannot start \(executable.path): \(error)", stderrTail: "")
        }
        let box = ProcessBox(process)
        let line = ReadyWaiter()
        let reader = Thread {
            let handle = stdout.fileHandleForReading
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { line.finish(nil); return }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 10) {
                    let text = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    if let ready = ReadyLine.parse(text) { line.finish(ready) }
                }
            }
        }
        reader.start()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let result = line.result {
                guard let ready = result else { break }
                return ServerProcess(ready: ready, logFile: logFile, process: box)
            }
            if !process.isRunning, line.result == nil { try? await Task.sleep(for: .milliseconds(50)); if line.result == nil { break } }
            try? await Task.sleep(for: .milliseconds(10))
        }
        if process.isRunning { process.terminate() }
        let tail = (try? String(contentsOf: logFile, encoding: .utf8)).map { String($0.suffix(4000)) } ?? ""
        throw LaunchError(message: "\(executable.lastPathComponent) did not print a READY line (exit status \(process.isRunning ? "running" : String(process.terminationStatus)))",
                          stderrTail: tail)
    }

    /// Sends SIGTERM and waits up to `grace` for exit, then SIGKILL. Returns the wait in seconds.
    @discardableResult
    public func stop(grace: Duration = .seconds(3)) async -> Double {
        let started = ContinuousClock.now
        guard process.process.isRunning else { return 0 }
        kill(pid, SIGTERM)
        let deadline = started + grace
        while process.process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if process.process.isRunning {
            kill(pid, SIGKILL)
            await ChildProcess.exit(of: process.process)
        }
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The exit status after the process ended.
    public var terminationStatus: Int32 { process.process.terminationStatus }

    /// The child's stderr so far.
    public func logs() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
}

/// Holds the first READY line (or end of output) seen by the reader thread.
final class ReadyWaiter: Sendable {
    private let state = Mutex<ReadyLine??>(nil)
    var result: ReadyLine?? { state.withLock { $0 } }
    func finish(_ line: ReadyLine?) {
        state.withLock { if $0 == nil { $0 = .some(line) } }
    }
}

/// Finds the trio's executables (`mock-server`, `push-relay`, `survey-cli`), trying in order:
/// 1. `$TRIO_BIN_DIR`;
/// 2. the directory of the running binary and up to three above it (a test bundle runs from `.build/<config>/`, next
///    to the executables it was built with);
/// 3. every directory on `$PATH` (an unpacked release archive's `bin/`);
/// 4. `./.build/debug` under the current directory.
public enum Executables {
    /// The directories tried, in order.
    public static func candidates() -> [URL] {
        var result: [URL] = []
        let environment = ProcessInfo.processInfo.environment
        if let dir = environment["TRIO_BIN_DIR"], !dir.isEmpty { result.append(URL(fileURLWithPath: dir)) }
        let fm = FileManager.default
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
            for _ in 0..<4 {
                result.append(dir)
                dir = dir.deletingLastPathComponent()
            }
        }
        for entry in (environment["PATH"] ?? "").split(separator: ":") where !entry.isEmpty {
            result.append(URL(fileURLWithPath: String(entry)))
        }
        result.append(URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent(".build/debug"))
        return result
    }

    /// The first candidate directory holding an executable `name`.
    public static func locate(_ name: String) throws(NotFound) -> URL {
        let tried = candidates()
        for dir in tried {
            let url = dir.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw NotFound(name: name, tried: tried.map(\.path))
    }

    /// ``locate(_:)``, or the first candidate's path when nothing is found (starting it then fails with that path).
    public static func url(_ name: String) -> URL {
        (try? locate(name)) ?? (candidates().first ?? URL(fileURLWithPath: ".build/debug")).appendingPathComponent(name)
    }

    /// The directory `mock-server` was found in.
    public static func directory() -> URL {
        url("mock-server").deletingLastPathComponent()
    }

    /// No candidate directory holds the executable.
    public struct NotFound: Error, CustomStringConvertible {
        /// The executable's name.
        public var name: String
        /// The directories searched, in order.
        public var tried: [String]
        /// What was searched and how to fix it.
        public var description: String {
            "cannot find the executable \(name): build the package (swift build), set TRIO_BIN_DIR to the directory holding it, "
                + "or put that directory on PATH. Tried: \(tried.joined(separator: ", "))"
        }
    }
}
