import ServerSupport
import Testing
@testable import MockServer

/// `Deadline`: a database operation that never returns stops holding its caller.
@Suite struct DeadlineTests {
    struct TimedOut: Error {}

    @Test func aFastOperationAnswersItsValue() async throws {
        let value = try await Deadline.run(.seconds(5), timeout: { TimedOut() }) { 42 }
        #expect(value == 42)
        await #expect(throws: CancellationError.self) {
            try await Deadline.run(.seconds(5), timeout: { TimedOut() }) { () async throws -> Int in throw CancellationError() }
        }
    }

    @Test(.timeLimit(.minutes(1))) func anOperationThatNeverReturnsTimesOutAndIsCancelled() async throws {
        let cancelled = Flag()
        let started = ContinuousClock.now
        await #expect(throws: TimedOut.self) {
            try await Deadline.run(.milliseconds(200), timeout: { TimedOut() }) { () async -> Int in
                // Ignores cancellation for a while, as a lost query does, then notes it.
                await withTaskCancellationHandler {
                    while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
                    await cancelled.set()
                    return 0
                } onCancel: {}
            }
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        for _ in 0..<100 where !(await cancelled.value) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await cancelled.value)
    }

    @Test(.timeLimit(.minutes(1))) func theCallersCancellationEndsTheWait() async throws {
        let waiting = Task {
            try await Deadline.run(.seconds(60), timeout: { TimedOut() }) { () async throws -> Int in
                try await Task.sleep(for: .seconds(60))
                return 1
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }

    @Test func theTimeoutIsA503WithAStableCode() {
        let error = PostgresStoreError.timedOut("a statement", after: .seconds(30))
        #expect(error.status.code == 503 && error.code == "database_unavailable")
    }
}

actor Flag {
    var value = false
    func set() { value = true }
}
