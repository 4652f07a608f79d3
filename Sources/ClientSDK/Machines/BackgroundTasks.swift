import Synchronization

/// Every background task of one client, run as children of one task group: the group is driven by
/// ``SurveyClient/run()`` (structured under its caller) or, for a client started with `start()` alone, by one owner task
/// the client cancels on `close()` or when it is dropped. A job can be cancelled on its own and awaited; `shutdown()`
/// cancels them all, and no job starts after it.
final class BackgroundTasks: Sendable {
    private struct State {
        var queue: [BackgroundJob] = []
        var live: [ObjectIdentifier: BackgroundJob] = [:]
        var waiter: CheckedContinuation<BackgroundJob?, Never>?
        var claimed = false
        var closed = false
        var owner: Task<Void, Never>?
    }

    private let state = Mutex(State())

    /// Runs `body` as a child of the group. When the group has shut down, the job is returned already finished.
    @discardableResult
    func spawn(_ body: @escaping @Sendable () async -> Void) -> BackgroundJob {
        let job = BackgroundJob(body)
        let accepted: Bool = state.withLock { state in
            guard !state.closed else { return false }
            state.live[ObjectIdentifier(job)] = job
            if let waiter = state.waiter {
                state.waiter = nil
                waiter.resume(returning: job)
            } else {
                state.queue.append(job)
            }
            return true
        }
        if !accepted { job.markFinished() }
        ensureDriven()
        return job
    }

    /// Marks the group as driven by the caller's ``drive()`` (call before the first `spawn`, so no owner task is made).
    /// False when it is driven already or shut down.
    func claim() -> Bool {
        state.withLock { state in
            guard !state.claimed, !state.closed else { return false }
            state.claimed = true
            return true
        }
    }

    /// Runs the jobs until ``shutdown()`` or until the calling task is cancelled (which cancels every job and ends the
    /// group: jobs spawned later are returned finished).
    func drive() async {
        await withDiscardingTaskGroup { group in
            while let job = await next() {
                group.addTask { [self] in
                    await job.run()
                    finished(job)
                }
            }
            group.cancelAll()
        }
        shutdown()
    }

    private func next() async -> BackgroundJob? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<BackgroundJob?, Never>) in
                state.withLock { state in
                    if state.closed || Task.isCancelled {
                        continuation.resume(returning: nil)
                    } else if !state.queue.isEmpty {
                        continuation.resume(returning: state.queue.removeFirst())
                    } else {
                        state.waiter = continuation
                    }
                }
            }
        } onCancel: {
            state.withLock { state in
                state.waiter?.resume(returning: nil)
                state.waiter = nil
            }
        }
    }

    private func finished(_ job: BackgroundJob) {
        _ = state.withLock { $0.live.removeValue(forKey: ObjectIdentifier(job)) }
    }

    /// Starts the owner task when nobody drives the group.
    private func ensureDriven() {
        state.withLock { state in
            guard !state.claimed, !state.closed else { return }
            state.claimed = true
            state.owner = Task { [self] in await drive() }
        }
    }

    /// Cancels every job; no job starts afterwards. Jobs that never started are finished at once.
    func shutdown() {
        let (jobs, queued, waiter, owner) = state.withLock { state in
            state.closed = true
            let result = (Array(state.live.values), state.queue, state.waiter, state.owner)
            state.queue = []
            state.waiter = nil
            state.owner = nil
            return result
        }
        waiter?.resume(returning: nil)
        for job in jobs { job.cancel() }
        for job in queued { job.markFinished() }
        owner?.cancel()
    }

    /// Jobs spawned and not finished (for tests).
    var liveCount: Int { state.withLock { $0.live.count } }
}

/// One background job: cancellable on its own (the group's other jobs go on), and awaitable. Two one-shot signals
/// carry its state: `stop` (``cancel()``, or the group's cancellation) and `done` (it ended, or never started).
final class BackgroundJob: Sendable {
    private let body: @Sendable () async -> Void
    private let stop = OneShot()
    private let done = OneShot()

    init(_ body: @escaping @Sendable () async -> Void) {
        self.body = body
    }

    /// Cancels the job's task (it runs on until it notices, as any cancelled task).
    func cancel() { stop.fire() }

    /// Returns once the job has ended (or never started because the group had shut down).
    var value: Void {
        get async { await done.wait() }
    }

    /// Runs the body in a task that ``cancel()`` (or the group's cancellation) cancels.
    func run() async {
        if !stop.isFired {
            await withTaskGroup(of: Void.self) { inner in
                inner.addTask { [body] in await body() }
                inner.addTask { [stop] in
                    // Returns on cancel(), or when the body ended first (the group cancels this task).
                    await withTaskCancellationHandler { await stop.wait() } onCancel: { stop.fire() }
                }
                _ = await inner.next()
                inner.cancelAll()
            }
        }
        markFinished()
    }

    func markFinished() { done.fire() }
}
