import Foundation
import Synchronization

/// Runs a program to its end without blocking a thread of Swift's cooperative pool: its output is read on threads of
/// its own, its end comes through `Process.terminationHandler`, and the calling task is resumed when all three are in.
///
/// `Process.waitUntilExit()` or a pipe's `readDataToEndOfFile()` called from a test holds one of the pool's threads
/// for as long as the program runs; on a two-core machine two such calls stall every other task of the test process.
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

    /// Runs `executable` with `arguments` to its end.
    /// - Throws: when the program cannot be started.
    public static func run(_ executable: URL, _ arguments: [String]) async throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        let ending = Ending()
        process.terminationHandler = { ended in ending.update { $0.status = ended.terminationStatus } }
        try process.run()
        // Each pipe read to its end on a thread of its own (one after the other could leave the program blocked on the
        // other, full pipe).
        Thread {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            ending.update { $0.output = text }
        }.start()
        Thread {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            ending.update { $0.errors = text }
        }.start()
        return await withCheckedContinuation { continuation in ending.update { $0.continuation = continuation } }
    }

    /// Waits until `process` (started elsewhere) has ended, by looking every 10 ms rather than blocking a thread.
    public static func exit(of process: Process) async {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// The three parts of a program's end, arriving from three threads in any order, and the task waiting for them:
    /// whichever part comes last resumes it.
    private final class Ending: Sendable {
        struct Parts {
            var output: String?
            var errors: String?
            var status: Int32?
            var continuation: CheckedContinuation<Result, Never>?
        }

        private let parts = Mutex(Parts())

        func update(_ change: (inout Parts) -> Void) {
            let ready = parts.withLock { parts -> (CheckedContinuation<Result, Never>, Result)? in
                change(&parts)
                guard let continuation = parts.continuation, let output = parts.output, let errors = parts.errors,
                      let status = parts.status else { return nil }
                parts.continuation = nil
                return (continuation, Result(status: status, output: output, errors: errors))
            }
            if let (continuation, result) = ready { continuation.resume(returning: result) }
        }
    }
}
