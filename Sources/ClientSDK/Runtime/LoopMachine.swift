/// The decisions of one of the client's loops: a value type that takes events and returns an action, as
/// ``OutboxRetryMachine`` does. The loop (``MachineLoop``) owns it and performs its actions; nothing else touches it.
protocol LoopMachine: Sendable {
    associatedtype Event: Sendable
    associatedtype Action: Sendable

    /// Feeds an event; returns what the loop does next.
    mutating func event(_ event: Event) -> Action

    /// The loop was halted (`stop()`): whatever it was doing was cancelled, and it starts again from rest.
    mutating func halted()

    /// True at rest (nothing scheduled or running).
    var isIdle: Bool { get }
}

/// How a loop performs one of its machine's actions.
enum LoopWork<Event: Sendable>: Sendable {
    /// Nothing to do.
    case none
    /// Run this beside the loop (a child of its task group); the event it returns, if any, goes back to the machine.
    case run(@Sendable () async -> Event?)
    /// Feed this event to the machine after a wait.
    case after(Duration, Event)
}
