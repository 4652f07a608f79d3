/// A client's lifecycle: `idle` (made, or stopped), `running` (started: background work runs), `closed` (for good:
/// its directory lock is released, and every call throws `closed`). A value type the actor asks before acting.
struct ClientLifecycle: Sendable, Equatable {
    enum Phase: Sendable, Equatable { case idle, running, closed }

    private(set) var phase = Phase.idle

    /// `start()` may run; false once closed.
    mutating func starting() -> Bool {
        guard phase != .closed else { return false }
        phase = .running
        return true
    }

    /// `stop()`: background work ends; the client may start again.
    mutating func stopped() {
        if phase == .running { phase = .idle }
    }

    /// `close()`: true the first time (the caller tears down), false after.
    mutating func closing() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        return true
    }

    var isClosed: Bool { phase == .closed }
}
