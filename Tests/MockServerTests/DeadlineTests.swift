import ServerSupport
import Synchronization
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

    /// An operation on a connection that closed under it (PostgreSQL killed) ends within a check of `lost`, not at its
    /// limit: a lost lock query held a lock connection, and the study's locks behind it, for 120 s.
    @Test(.timeLimit(.minutes(1))) func anOperationWhoseConnectionIsLostEndsAtTheNextCheck() async throws {
        struct Lost: Error {}
        let closed = Flag()
        let started = ContinuousClock.now
        let waiting = Task {
            try await Deadline.run(.seconds(60), timeout: { TimedOut() }, lost: { closed.isSetNow ? Lost() : nil }) { () async -> Int in
                await withTaskCancellationHandler {
                    while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
                    return 0
                } onCancel: {}
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        await closed.set()
        await #expect(throws: Lost.self) { try await waiting.value }
        let took = ContinuousClock.now - started
        #expect(took < Deadline.lostCheckInterval * 3, "\(took)")
        // While the connection stays open, the operation runs to its end.
        let value = try await Deadline.run(.seconds(60), timeout: { TimedOut() }, lost: { nil }) { () async throws -> Int in
            try await Task.sleep(for: .milliseconds(1_500))
            return 7
        }
        #expect(value == 7)
    }

    @Test func theTimeoutIsA503WithAStableCode() {
        let error = PostgresStoreError.timedOut("a statement", after: .seconds(30))
        #expect(error.status.code == 503 && error.code == "database_unavailable")
    }
}

actor Flag {
    var value = false
    /// `value`, read from outside the actor (for a synchronous check).
    nonisolated let mirror = Mutex(false)
    func set() {
        value = true
        mirror.withLock { $0 = true }
    }
    nonisolated var isSetNow: Bool { mirror.withLock { $0 } }
}
