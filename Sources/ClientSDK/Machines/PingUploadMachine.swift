/// The telemetry upload queue's decisions: which ping goes now, which waits for the rate limit's window to end, which
/// another pass is already sending, when the endpoint turned out to have no ingestion route, and when nothing is in
/// flight any more.
///
/// A value type: the client walks its queue on its actor, feeding one event per ping and performing the action
/// returned (the upload itself, the wake-up at the end of a window). Several passes may walk the queue at once (a
/// flush, the end of a session, the retry loop): a ping one of them is sending is skipped by the others, and a pass
/// that waits for one to finish (`pause()` before its last upload) learns it from ``Action/settled``.
struct PingUploadMachine: Sendable {
    /// How an upload ended.
    enum Outcome: Sendable, Equatable {
        /// The server took it, or it was dropped for good (rejected, too large, unreadable): it left the queue.
        case done
        /// The endpoint has no ingestion route (404/405): the ping stays, and nothing more goes in this run.
        case routeMissing
        /// No answer, or the server failed: it stays for the retry loop.
        case failed
    }

    enum Event: Sendable, Equatable {
        /// A pass reached the queue's ping `id` at `now`.
        case next(id: String, at: ContinuousClock.Instant)
        /// The upload of ping `id` ended.
        case finished(id: String, Outcome)
        /// The wake-up at the end of a rate-limit window is due.
        case wakeDue
        /// The client stopped: its wake-up was cancelled.
        case stopped
    }

    enum Action: Sendable, Equatable {
        /// Upload the ping, then report ``Event/finished(id:_:)``.
        case upload
        /// Another pass is sending it: go on to the next.
        case skip
        /// The rate limit is reached: this pass ends; wake up after `wake` (nil: a wake-up is already set) and walk
        /// the queue again.
        case pause(wake: Duration?)
        /// Nowhere to send it in this run (no ingestion route): the pass ends, and every later one.
        case halt
        /// Nothing more to do for this event.
        case none
        /// The last upload in flight ended: a pass waiting for the others may go on.
        case settled
        /// The window is over: walk the queue again.
        case walk
    }

    private var limiter: PingRateLimiter
    /// Pings being uploaded by some pass.
    private(set) var inFlight: Set<String> = []
    /// The endpoint answered 404/405 in this run.
    private(set) var routeMissing = false
    /// A wake-up waits for the rate limit's window to end.
    private(set) var wakeScheduled = false

    init(limit: Int, interval: Duration) {
        limiter = PingRateLimiter(limit: limit, interval: interval)
    }

    /// Feeds an event; returns what to do.
    mutating func event(_ event: Event) -> Action {
        switch event {
        case .next(let id, let now):
            if routeMissing { return .halt }
            if inFlight.contains(id) { return .skip }
            if let wait = limiter.take(at: now) {
                guard !wakeScheduled else { return .pause(wake: nil) }
                wakeScheduled = true
                return .pause(wake: wait)
            }
            inFlight.insert(id)
            return .upload
        case .finished(let id, let outcome):
            guard inFlight.remove(id) != nil else { return .none }
            if outcome == .routeMissing { routeMissing = true }
            return inFlight.isEmpty ? .settled : .none
        case .wakeDue:
            guard wakeScheduled else { return .none }
            wakeScheduled = false
            return routeMissing ? .none : .walk
        case .stopped:
            wakeScheduled = false
            return .none
        }
    }
}
