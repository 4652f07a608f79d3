/// A client's lifecycle: `idle` (made, stopped, or a first start that failed), `starting` (a start's work runs in one
/// task; a second `start()` joins it), `running` (started: background work runs), `closed` (for good: its directory
/// lock is released, and every call throws `closed`).
///
/// A value type: `start()`, `stop()` and `close()` feed it events on the actor and perform the action returned; the
/// start task's handle is the actor's. What it settles are the interleavings of those calls: a second start joins the
/// first (two starts must not mint two tokens); a stop or close during a start cancels it and waits for it before
/// ending the background work (else the start went on to open the stream after the stop); and a first start that
/// fails ends what it had begun (its push stream, opened before the registration, kept running with the client
/// unregistered and "idle").
struct ClientLifecycle: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case idle
        /// Start number `number` runs; `restart`: the client was running before it (a start while running redoes
        /// the start's checks: uploads left, receipts, features).
        case starting(number: Int, restart: Bool)
        case running
        case closed
    }

    enum Event: Sendable, Equatable {
        /// `start()` was called.
        case startRequested
        /// Start `number`'s task ended (`succeeded` false: it threw or was cancelled).
        case startEnded(number: Int, succeeded: Bool)
        /// `stop()` was called.
        case stopRequested
        /// `close()` was called.
        case closeRequested
    }

    enum Action: Sendable, Equatable {
        /// Nothing to do.
        case none
        /// Closed: the call throws `closed`.
        case refuse
        /// A start runs already: wait for it and share its outcome.
        case join
        /// Run the start's work in a task, and report ``Event/startEnded(number:succeeded:)`` with `number`.
        case begin(number: Int)
        /// A first start failed: end every background task it began.
        case undo
        /// End the background work and the session; `cancellingStart`: cancel the start under way and wait for it first.
        case stop(cancellingStart: Bool)
        /// Stop (as above), then release the client's resources, once.
        case close(cancellingStart: Bool)
    }

    private(set) var phase = Phase.idle
    private var starts = 0

    /// Feeds an event; returns what to do.
    mutating func event(_ event: Event) -> Action {
        switch (phase, event) {
        case (.closed, .startRequested):
            return .refuse
        case (.starting, .startRequested):
            return .join
        case (.idle, .startRequested), (.running, .startRequested):
            starts += 1
            phase = .starting(number: starts, restart: phase == .running)
            return .begin(number: starts)
        case (.starting(let number, let restart), .startEnded(let ended, let succeeded)) where ended == number:
            // A start while running that failed (a check that threw) leaves the client running.
            phase = succeeded || restart ? .running : .idle
            return succeeded || restart ? .none : .undo
        case (_, .startEnded):
            // Stopped or closed meanwhile (then maybe started again: the number is another): that call ends what
            // this start began.
            return .none
        case (.closed, .stopRequested), (.closed, .closeRequested):
            return .none
        case (_, .stopRequested):
            // Idle too: a client never started may run retries (an upload that failed, an app-handed push's fetch).
            defer { phase = .idle }
            return .stop(cancellingStart: isStarting)
        case (_, .closeRequested):
            defer { phase = .closed }
            return .close(cancellingStart: isStarting)
        }
    }

    private var isStarting: Bool {
        if case .starting = phase { return true }
        return false
    }

    var isClosed: Bool { phase == .closed }
}
