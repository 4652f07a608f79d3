/// A wake-up at a time: the end of a throttled telemetry window (``PingUploadMachine``), when the queue is walked
/// again. A later request replaces the wake-up waiting (its wait is left to run out and ignored).
struct WakeMachine: LoopMachine, Equatable {
    enum Event: Sendable, Equatable {
        /// Wake after this long (instead of any wake-up waiting).
        case schedule(after: Duration)
        /// Wait number `generation` is over.
        case due(generation: Int)
    }

    enum Action: Sendable, Equatable {
        case none
        /// Wait, then report `due(generation:)`.
        case wait(Duration, generation: Int)
        /// The time has come.
        case wake
    }

    private(set) var waiting: Int?
    private var generation = 0

    mutating func event(_ event: Event) -> Action {
        switch event {
        case .schedule(let wait):
            generation += 1
            waiting = generation
            return .wait(wait, generation: generation)
        case .due(let due):
            guard waiting == due else { return .none }
            waiting = nil
            return .wake
        }
    }

    mutating func halted() { waiting = nil }

    var isIdle: Bool { waiting == nil }
}
