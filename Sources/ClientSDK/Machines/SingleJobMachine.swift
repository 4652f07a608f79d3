/// A job that runs once at a time: the `events` ping of a batch that filled up. Asking for it while it runs does nothing.
struct SingleJobMachine: LoopMachine, Equatable {
    enum Event: Sendable, Equatable {
        /// Run the job unless it runs.
        case requested
        /// The job ended.
        case finished
    }

    enum Action: Sendable, Equatable {
        case none
        /// Run the job, then report `finished`.
        case run
    }

    private(set) var running = false

    mutating func event(_ event: Event) -> Action {
        switch event {
        case .requested:
            guard !running else { return .none }
            running = true
            return .run
        case .finished:
            running = false
            return .none
        }
    }

    mutating func halted() { running = false }

    var isIdle: Bool { !running }
}
