import Synchronization

/// The one way into a loop: events for its machine, and halts. Messages are handled one at a time in the order sent,
/// so what the actor sends (an outbox retry asked for) and what the loop's own work reports (an attempt's outcome) meet
/// in the machine one by one. Sending never waits; ``halt()`` waits until the loop has ended everything it was doing.
final class LoopMailbox<Event: Sendable>: LoopControl {
    enum Message: Sendable {
        /// An event for the machine; `epoch` tells which run of the loop's work reported it (nil: from outside, always
        /// taken). Reports of work a halt cancelled are dropped.
        case event(Event, epoch: Int?)
        /// End all work, reset the machine, then fire the acknowledgement (nil: nobody waits).
        case halt(OneShot?)
    }

    private struct State {
        /// A message was sent since the mailbox was made (a halt of a loop that never had anything to do returns at once).
        var used = false
        /// The loop has ended (or the mailbox was finished): halts return at once.
        var ended = false
        /// Halts sent and not yet acknowledged; fired when the loop ends, if it never reaches them.
        var acks: [ObjectIdentifier: OneShot] = [:]
        var idle = true
        /// A loop reads the mailbox.
        var started = false
    }

    let messages: AsyncStream<Message>
    private let continuation: AsyncStream<Message>.Continuation
    private let state = Mutex(State())
    /// Called on each send, with whether it is the mailbox's first: the runtime then starts the loop (and drives the
    /// loops if nobody does yet).
    private let wake: @Sendable (_ first: Bool) -> Void

    init(wake: @escaping @Sendable (_ first: Bool) -> Void = { _ in }) {
        (messages, continuation) = AsyncStream.makeStream()
        self.wake = wake
    }

    /// Sends an event to the machine.
    func send(_ event: Event) {
        let first = state.withLock { state in
            defer { state.used = true }
            return !state.used
        }
        continuation.yield(.event(event, epoch: nil))
        wake(first)
    }

    /// A report of the loop's own work, from run `epoch`.
    func report(_ event: Event, epoch: Int) {
        continuation.yield(.event(event, epoch: epoch))
    }

    /// Ends everything the loop is doing and resets its machine; returns once that is done (at once when the loop never
    /// had anything to do, or has ended).
    func halt() async {
        let ack = OneShot()
        let waits = state.withLock { state in
            guard state.used, !state.ended else { return false }
            state.acks[ObjectIdentifier(ack)] = ack
            return true
        }
        guard waits else { return }
        if case .terminated = continuation.yield(.halt(ack)) { acknowledge(ack) }
        await ack.wait()
    }

    /// Ends everything the loop is doing without waiting for it (the messages sent after still come after). Nothing to
    /// end when the mailbox was never sent anything (no halt piles up for a loop that never starts).
    func haltSoon() {
        guard state.withLock({ $0.used }) else { return }
        continuation.yield(.halt(nil))
    }

    /// The loop handled a halt.
    func acknowledge(_ ack: OneShot) {
        _ = state.withLock { $0.acks.removeValue(forKey: ObjectIdentifier(ack)) }
        ack.fire()
    }

    /// The loop's machine is at rest or not (kept for ``isIdle``).
    func noteIdle(_ idle: Bool) {
        state.withLock { $0.idle = idle }
    }

    /// Whether the loop's machine was at rest after the last message it handled.
    var isIdle: Bool { state.withLock { $0.idle } }

    /// The loop ended: every halt still waiting returns, and later sends are dropped.
    func loopEnded() {
        let acks = state.withLock { state in
            state.ended = true
            defer { state.acks = [:] }
            return Array(state.acks.values)
        }
        continuation.finish()
        for ack in acks { ack.fire() }
    }

    /// Ends the mailbox: the loop reads the messages already sent, then ends. A loop that never started never reads
    /// them: the halts waiting return now.
    func finish() {
        continuation.finish()
        if !hasLoop { loopEnded() }
    }

    /// The loop's first read (until then ``finish()`` ends the mailbox itself).
    func loopBegan() {
        state.withLock { $0.started = true }
    }

    /// Whether a loop has begun reading this mailbox.
    var hasLoop: Bool { state.withLock { $0.started } }
}

/// What the runtime does to a loop whatever its events: halt it, and end it.
protocol LoopControl: Sendable {
    /// Ends everything the loop is doing and resets it; returns once that is done.
    func halt() async
    /// Ends the loop once it has read what was sent.
    func finish()
}
