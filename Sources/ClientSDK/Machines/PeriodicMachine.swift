/// A loop that ticks again and again: the heartbeat, the device's schedule, the session's heartbeat and the retries of
/// pushes the app handed over. Each tick says how long to wait before the next (nil ends the loop until it is begun
/// again); one loop of a kind runs at a time, so beginning a running loop does nothing.
struct PeriodicMachine: LoopMachine, Equatable {
    enum State: Sendable, Equatable {
        case idle
        /// Waiting for the next tick.
        case waiting
        /// A tick runs.
        case ticking
    }

    enum Event: Sendable, Equatable {
        /// Start ticking: the first tick after `firstWait` (at once when zero). `tag` goes with every tick of this run
        /// (the session heartbeat's session number).
        case begin(firstWait: Duration, tag: Int = 0)
        /// The wait is over.
        case due
        /// A tick ended; wait `next` before the next one, or end on nil.
        case ticked(next: Duration?)
    }

    enum Action: Sendable, Equatable {
        case none
        /// Wait, then report `due`.
        case wait(Duration)
        /// Run one tick, then report `ticked`.
        case tick(tag: Int)
    }

    private(set) var state = State.idle
    private var tag = 0

    mutating func event(_ event: Event) -> Action {
        switch (state, event) {
        case (.idle, .begin(let firstWait, let tag)):
            self.tag = tag
            if firstWait > .zero {
                state = .waiting
                return .wait(firstWait)
            }
            state = .ticking
            return .tick(tag: tag)
        case (.waiting, .due):
            state = .ticking
            return .tick(tag: tag)
        case (.ticking, .ticked(let next)):
            guard let next else {
                state = .idle
                return .none
            }
            state = .waiting
            return .wait(next)
        case (.waiting, .begin), (.ticking, .begin), (.idle, .due), (.ticking, .due), (.idle, .ticked), (.waiting, .ticked):
            // Running already, or a report that does not fit (the loop drops reports of work a halt cancelled).
            return .none
        }
    }

    mutating func halted() { state = .idle }

    var isIdle: Bool { state == .idle }
}
