import Foundation

/// Runs a program to its end without blocking a thread of Swift's cooperative pool: its output is read and its exit
/// waited for on threads of its own, and the calling task is resumed when it has ended.
///
/// `Process.waitUntilExit()` or a pipe's `readDataToEndOfFile()` called from a test holds one of the pool's threads
/// for as long as the program runs; on a two-core machine two such calls stall every other task of the test process
/// (a whole `swift test` run paused about 10 s at its start this way).
public enum ChildProcess {
    /// How a program ended and what it wrote.
    public struct Result: Sendable {
        /// Its exit status (or the signal that ended it).
        public var status: Int32
        /// Its standard output.
        public var output: String
        /// Its standard error.
        public var errors: String
    }

    /// Runs `executable` with `arguments` (and `environment`, when given, instead of this process's) to its end.
    /// - Throws: when the program cannot be started.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) async throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let box = UncheckedProcess(process)
        return await withCheckedContinuation { continuation in
            // Each pipe read to its end on a thread of its own (one after the other could leave the program blocked on
            // a full pipe), then the exit waited for: threads of this call's own, none of them the pool's.
            let errorText = TextBox()
            let errorsDone = DispatchSemaphore(value: 0)
            Thread {
                errorText.text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                errorsDone.signal()
            }.start()
            Thread {
                let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                errorsDone.wait()
                box.process.waitUntilExit()
                continuation.resume(returning: Result(status: box.process.terminationStatus, output: text, errors: errorText.text))
            }.start()
        }
    }

    /// Waits until `process` (started elsewhere) has ended, by looking every 10 ms rather than blocking a thread.
    public static func exit(of process: Process) async {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// Standard error's text: written by its reader before it signals, read by the other thread after waiting.
    private final class TextBox: @unchecked Sendable {
        var text = ""
    }

    /// A `Process` handed to the threads that wait for it (it is not `Sendable`; only those threads touch it).
    private final class UncheckedProcess: @unchecked Sendable {
        let process: Process
        init(_ process: Process) { self.process = process }
    }
}
