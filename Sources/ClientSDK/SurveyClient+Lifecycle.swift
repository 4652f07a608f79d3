import Foundation
import Synchronization
import Logging
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// Starting, stopping, closing and running a client, and the heartbeat that runs while it runs.
extension SurveyClient {
    // MARK: Lifecycle

    /// Gets a relay token (once), opens the push stream (reconnecting on its own), registers (once), retries uploads
    /// left from an earlier run, and begins a session: a `dirty_startup` baseline ping when the last run did not end
    /// cleanly, an `events` ping (`startup`) with events left from it, a `baseline` ping (`active`), MMA `start`.
    /// - Throws: ``SurveyClientError`` when the relay or the server refuses (e.g. `push_token_required`,
    ///   `invalid_credentials`); the stream keeps running only after success.
    public func start() async throws(SurveyClientError) {
        let number: Int
        switch lifecycle.event(.startRequested) {
        case .refuse:
            throw .closed
        case .begin(let begun):
            number = begun
        default:
            // Another caller is starting the client: share its outcome (two starts must not mint two tokens).
            if let running = startTask { try await Self.awaitStart(running) }
            return
        }
        let task = Task { try await self.performStart() }
        startTask = task
        let failure: SurveyClientError?
        do throws(SurveyClientError) {
            try await Self.awaitStart(task)
            failure = nil
        } catch {
            failure = error
        }
        if startTask == task { startTask = nil }
        // A first start that failed ends what it began (the stream opened before the registration, the retries).
        if lifecycle.event(.startEnded(number: number, succeeded: failure == nil)) == .undo {
            await stopBackground()
        }
        if let failure { throw failure }
    }

    static func awaitStart(_ task: Task<Void, any Error>) async throws(SurveyClientError) {
        do {
            try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        } catch let error as SurveyClientError {
            throw error
        } catch {
            throw SurveyClientError.cancelled
        }
    }

    func performStart() async throws(SurveyClientError) {
        closePreviousRun()
        switch configuration.pushSource {
        case .relay:
            if state.relayToken == nil { try await obtainToken() }
            try Self.checkNotCancelled()
            startStream()
        case .external, .none:
            // Pushes handed over by the app (or none): their fetch retries run here rather than on a stream.
            startIntakeRetries()
        }
        if !state.registered { try await register() }
        try Self.checkNotCancelled()
        // A token the server does not hold yet (a rotation during registration, a crash after saving a new token):
        // tell it now; if that fails, the retry loop keeps at it.
        var retryNeeded = false
        do { try await announceTokenIfNeeded() } catch { retryNeeded = true }
        try Self.checkNotCancelled()
        if await !retryUploads() || retryNeeded { scheduleUploadRetry() }
        await retryPings()
        if state.scheduling == "device" {
            _ = try? await checkForSurveys()
            try Self.checkNotCancelled()
            startLocalSchedule()
        }
        try Self.checkNotCancelled()
        startHeartbeat()
        await confirmReceipts()
        // Feature values for messaging (best effort: the cached copy, or the app's defaults, serve offline).
        _ = try? await refreshFeatures()
        try Self.checkNotCancelled()
        await beginSession(startup: true)
    }

    /// A start that `stop()` or `close()` cancelled starts nothing more (what it started, they end).
    static func checkNotCancelled() throws(SurveyClientError) {
        if Task.isCancelled { throw .cancelled }
    }

    /// Beiwe's `/mobile-heartbeat` while the client runs: one now, then every `heartbeatInterval` (its loop ticks
    /// ``heartbeatTick()``).
    func startHeartbeat() {
        guard configuration.heartbeatInterval != nil else { return }
        runtime.heartbeat.send(.begin(firstWait: .zero))
    }

    /// One tick of the heartbeat's loop.
    func heartbeatTick() async {
        await sendHeartbeat()
        await confirmReceipts()
    }

    /// One `/mobile-heartbeat`; the receipts it carried (`notification_uuids`) are confirmed once the server takes it.
    func sendHeartbeat() async {
        guard state.registered else { return }
        do {
            let carried = state.pendingReceipts ?? []
            let response = try await api.post("mobile-heartbeat", api.baseForm(state: state))
            if (200..<300).contains(response.status) {
                receiptsDelivered(carried)
            } else {
                logger.info("heartbeat answered \(response.status)")
            }
        } catch {
            logger.info("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stops the push stream and ends the session (as ``pause()``: its pings are sent, best effort). The client can be
    /// started again.
    public func stop() async {
        guard case .stop(let cancellingStart) = lifecycle.event(.stopRequested) else { return }
        await endRun(cancellingStart: cancellingStart)
    }

    /// Ends the background work and the session. A start under way is cancelled and waited for first (its caller gets
    /// `cancelled`): otherwise it went on to start the heartbeat and the stream after the background work had ended.
    func endRun(cancellingStart: Bool) async {
        if cancellingStart, let starting = startTask {
            starting.cancel()
            _ = await starting.result
        }
        await stopBackground()
        await endSession()
    }

    /// Halts every loop but the session's heartbeat and waits until each has ended its work: when this returns,
    /// nothing of the client runs but that heartbeat (it ends with the session, `endSession`, after this).
    func stopBackground() async {
        await runtime.halt(Set(ClientRuntime.Kind.allCases).subtracting([.sessionHeartbeat]))
        // After the loops halted: an event a halted loop's work sent on its way out reached the machine before this.
        _ = pingUploads.event(.stopped)
        intake.streamEnded()
    }

    /// Stops (waiting for every background task to end), releases the HTTP client if this client made it and the
    /// storage directory's lock, and ends ``events``. Another client may use the directory afterwards; every later call
    /// on this one throws `closed`, except the calls that end something (`stop()`, `pause()`, `close()`: they do nothing),
    /// the queries, and `record`, which apps call from any thread (it records nothing).
    public func close() async {
        guard case .close(let cancellingStart) = lifecycle.event(.closeRequested) else {
            // Closed, or closing in another call: return once that call has finished.
            await closed.wait()
            return
        }
        await endRun(cancellingStart: cancellingStart)
        await runtime.halt([.sessionHeartbeat])
        runtime.shutdown()
        continuation.finish()
        ownedHTTP?.shutdown()
        eventLog.close()
        files.releaseLock()
        closeRequest.fire()
        closed.fire()
    }

    /// True from the moment ``close()`` is called (every later call then throws `closed`, or does nothing: see ``close()``).
    public var isClosed: Bool { lifecycle.isClosed }

    /// Starts the client and runs it until the calling task is cancelled or ``close()`` is called, then closes it: the
    /// structured way to own a client, as a child of a task group or a ServiceLifecycle service. When this returns,
    /// none of the client's work runs any more.
    ///
    /// ```swift
    /// try await withThrowingTaskGroup(of: Void.self) { group in
    ///     group.addTask { try await client.run() }
    ///     ...                      // use the client
    ///     group.cancelAll()        // run() closes it and returns
    /// }
    /// ```
    public func run() async throws(SurveyClientError) {
        // This call drives the client's loops, so every one of them is a child of the caller's task.
        let drives = runtime.claim()
        let outcome: Result<Void, SurveyClientError> = await withDiscardingTaskGroup { group in
            if drives {
                group.addTask { [runtime] in await runtime.drive() }
            }
            do throws(SurveyClientError) {
                try await start()
            } catch {
                await close()
                // Cancelled while starting: the caller asked for the end, which is no failure.
                return error.isCancellation ? .success(()) : .failure(error)
            }
            await withTaskCancellationHandler {
                await closeRequest.wait()
            } onCancel: { [closeRequest] in
                closeRequest.fire()
            }
            await close()
            return .success(())
        }
        try outcome.get()
    }
}
