/// The client's background loops by kind, at most one of each: which run, and which `stop()` ends.
///
/// Each loop is a job of the client's one task group (``BackgroundTasks``); this value only keeps their handles, so a
/// loop is started once (a second start of a kind that runs is refused) and `stop()` takes every handle at once to
/// cancel and await them.
struct ClientLoops: Sendable {
    enum Kind: Sendable, Hashable, CaseIterable {
        /// The relay's push stream (``PushStreamMachine``).
        case stream
        /// Beiwe's `/mobile-heartbeat`, with the receipts it carries.
        case heartbeat
        /// The device's own schedule (``DeviceSchedule``).
        case localSchedule
        /// The outboxes' retries (``OutboxRetryMachine``).
        case outboxRetry
        /// Fetch retries of pushes the app handed over (no stream to run them).
        case intakeRetry
        /// The wake-up at the end of a throttled telemetry window (``PingUploadMachine``).
        case pingWake
        /// The `events` ping of a batch that filled up (`max_capacity`).
        case batch
        /// The session's MMA heartbeat (``SessionMachine``); ended with the session, not by `stop()` itself.
        case sessionHeartbeat
    }

    private var running: [Kind: BackgroundJob] = [:]

    /// Whether a loop of `kind` runs (or was started and not yet taken: a loop that ended by itself keeps its slot until
    /// then, so its kind is not started twice).
    func isRunning(_ kind: Kind) -> Bool { running[kind] != nil }

    /// Keeps `job` as the loop of `kind`. The caller checked ``isRunning(_:)`` first, or took the one before.
    mutating func started(_ kind: Kind, _ job: BackgroundJob) { running[kind] = job }

    /// Removes and returns the loop of `kind`: for its caller to cancel (and await), or because it ended.
    mutating func take(_ kind: Kind) -> BackgroundJob? { running.removeValue(forKey: kind) }

    /// Removes and returns every loop but those of `kept`, for `stop()` to cancel and await.
    mutating func takeAll(except kept: Set<Kind> = []) -> [BackgroundJob] {
        let taken = running.filter { !kept.contains($0.key) }
        for kind in taken.keys { running[kind] = nil }
        return Array(taken.values)
    }
}
