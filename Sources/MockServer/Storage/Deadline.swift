import ServerSupport
import Synchronization

/// Stops waiting for a database operation after a limit, even one that never returns.
///
/// postgres-nio can lose a query that was in flight when its connection died: killing PostgreSQL under load left
/// `/mobile-heartbeat` and `/download_surveys` requests unanswered after the database was back (new requests were
/// served at once). A request that waits for ever also holds whatever it holds for ever (a study or participant lock,
/// so every later registration of that study queued behind it). Here the operation runs in a task of its own; when
/// the limit passes first, the caller gets the timeout error at once and the task is cancelled. postgres-nio (1.33) does
/// not cancel a query already written when its task is cancelled: the store ends a lock connection's session whose
/// lock request or release did not answer (`PostgresStore.holdingAdvisoryLocks`), and a pooled operation's wait ends
/// within ``lostCheckInterval`` of its connection closing (`PostgresStore.pooled`). The caller's own cancellation ends
/// the wait the same way.
enum Deadline {
    /// How often `lost` is asked while an operation runs.
    static let lostCheckInterval: Duration = .seconds(1)

    /// The result of `operation`, or `timeout()` thrown once `limit` has passed.
    /// - Parameter lost: asked every ``lostCheckInterval`` while the operation runs; an error it returns ends the wait
    ///   at once (the connection the operation runs on has closed: a query in flight on a connection PostgreSQL dropped
    ///   may never be answered, and waiting out a 120 s limit held a lock connection and the locks behind it).
    static func run<T: Sendable>(_ limit: Duration, timeout: @escaping @Sendable () -> any Error,
                                 lost: (@Sendable () -> (any Error)?)? = nil,
                                 _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.begin(continuation)
                let work = Task {
                    do { race.finish(.success(try await operation())) } catch { race.finish(.failure(error)) }
                }
                race.watch(work)
                race.arm(Task {
                    // Suspends (no thread is held): one wait for the whole limit, or a check of `lost` every interval.
                    let end = ContinuousClock.now + limit
                    while ContinuousClock.now < end {
                        try? await Task.sleep(for: lost == nil ? end - .now : min(lostCheckInterval, end - .now))
                        guard !Task.isCancelled else { return }
                        if let error = lost?() {
                            race.finish(.failure(error))
                            return
                        }
                    }
                    race.finish(.failure(timeout()))
                })
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    /// One answer for the caller, whichever comes first; the loser's task is cancelled.
    private final class Race<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var early: Result<T, any Error>?
            var done = false
            var work: Task<Void, Never>?
            var timer: Task<Void, Never>?
        }
        private let state = Mutex(State())

        func begin(_ continuation: CheckedContinuation<T, any Error>) {
            let early = state.withLock { s -> Result<T, any Error>? in
                if let early = s.early { return early }
                s.continuation = continuation
                return nil
            }
            if let early { continuation.resume(with: early) }
        }

        func watch(_ work: Task<Void, Never>) {
            let cancel = state.withLock { s -> Bool in
                s.work = work
                return s.done
            }
            if cancel { work.cancel() }
        }

        func arm(_ timer: Task<Void, Never>) {
            let cancel = state.withLock { s -> Bool in
                s.timer = timer
                return s.done
            }
            if cancel { timer.cancel() }
        }

        func finish(_ result: Result<T, any Error>) {
            let taken = state.withLock { s -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?, Task<Void, Never>?)? in
                guard !s.done else { return nil }
                s.done = true
                guard let continuation = s.continuation else {
                    s.early = result
                    return (nil, s.work, s.timer)
                }
                s.continuation = nil
                return (continuation, s.work, s.timer)
            }
            guard let (continuation, work, timer) = taken else { return }
            timer?.cancel()
            if case .failure = result { work?.cancel() }
            continuation?.resume(with: result)
        }
    }
}

extension PostgresStoreError {
    /// The connection an operation ran on closed before it answered.
    static func connectionLost(during what: String) -> APIError {
        APIError(.serviceUnavailable, code: "database_unavailable",
                 "the connection to PostgreSQL closed during \(what); retry the request", headers: [.retryAfter: "1"])
    }

    /// An operation that did not finish within its limit: the database went away or stopped answering.
    static func timedOut(_ what: String, after limit: Duration) -> APIError {
        APIError(.serviceUnavailable, code: "database_unavailable",
                 "PostgreSQL did not answer \(what) within \(limit.components.seconds) s; the server stays up and retries with the next request",
                 headers: [.retryAfter: "1"])
    }
}
