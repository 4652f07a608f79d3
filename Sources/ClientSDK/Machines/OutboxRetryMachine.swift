/// The outbox retry loop's decisions: answer files, pings and an unannounced token that failed to go out are tried
/// again after a backoff (``Backoff/outbox``: 0.5 s doubling to 60 s, with jitter) until all three are done.
///
/// A value type owned by its loop (``MachineLoop``): requests from the client and the attempts' outcomes reach it one
/// at a time through the loop's mailbox, so a retry asked for while the last attempt runs is never lost (the loop used
/// to end after an attempt that found everything sent, and a failure in between found the loop still registered and
/// scheduled nothing).
struct OutboxRetryMachine: LoopMachine, Equatable {
    enum State: Sendable, Equatable {
        /// No loop runs.
        case idle
        /// The loop waits out a backoff.
        case waiting
        /// The loop is trying the outboxes; `again`: a retry was asked for meanwhile.
        case attempting(again: Bool)
    }

    enum Event: Sendable, Equatable {
        /// Something failed to go out and must be retried.
        case requested
        /// The loop's wait is over.
        case waitOver
        /// The loop tried every outbox; `allDone` when nothing is left to send.
        case attempted(allDone: Bool)
        /// The client stopped (the loop was cancelled).
        case stopped
    }

    enum Action: Sendable, Equatable {
        /// Nothing to do (a loop runs already, or none is needed).
        case none
        /// The loop leaves its rest: wait this long, then report `waitOver`.
        case startLoop(wait: Duration)
        /// Wait this long, then report `waitOver`.
        case wait(Duration)
        /// Try every outbox once, then report `attempted`.
        case attempt
        /// The loop comes to rest (everything went out, or a report came after a stop).
        case finish
    }

    private(set) var state = State.idle
    private var backoff = Backoff.outbox

    /// Feeds an event; returns what to do.
    mutating func event(_ event: Event) -> Action {
        switch (state, event) {
        case (_, .stopped):
            state = .idle
            backoff.reset()
            return .none
        case (.idle, .requested):
            state = .waiting
            return .startLoop(wait: backoff.failed())
        case (.waiting, .requested):
            return .none
        case (.attempting, .requested):
            state = .attempting(again: true)
            return .none
        case (.waiting, .waitOver):
            state = .attempting(again: false)
            return .attempt
        case (.attempting(let again), .attempted(let allDone)):
            if allDone && !again {
                state = .idle
                backoff.reset()
                return .finish
            }
            state = .waiting
            return .wait(backoff.failed())
        case (.idle, .waitOver), (.idle, .attempted), (.waiting, .attempted), (.attempting, .waitOver):
            // A loop of an earlier run reporting after `stopped`: it ends.
            return .finish
        }
    }

    mutating func halted() { _ = event(.stopped) }

    var isIdle: Bool { state == .idle }

    /// Failed attempts since the last success (the next wait's ceiling follows from it).
    var failures: Int { backoff.failures }
}
