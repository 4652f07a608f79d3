import Synchronization

/// The client's loops: one long-lived task per kind, each owning its machine (``LoopMachine``) and reading its own
/// mailbox, all children of one task group. A kind's loop starts with the first message it is sent and runs until the
/// runtime shuts down (a client that never uploads late has no outbox loop). ``SurveyClient/run()`` drives the group
/// (the loops are then children of its caller's task); a client started with `start()` alone has it driven by one
/// owner task, made on the first message any loop is sent. `stop()` halts the loops (each ends its work and rests,
/// awaited); `close()` and a dropped client end them (``shutdown()``).
final class ClientRuntime: Sendable {
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

    let stream: LoopMailbox<PushStreamMachine.Event>
    let heartbeat: LoopMailbox<PeriodicMachine.Event>
    let localSchedule: LoopMailbox<PeriodicMachine.Event>
    let outboxRetry: LoopMailbox<OutboxRetryMachine.Event>
    let intakeRetry: LoopMailbox<PeriodicMachine.Event>
    let pingWake: LoopMailbox<WakeMachine.Event>
    let batch: LoopMailbox<SingleJobMachine.Event>
    let sessionHeartbeat: LoopMailbox<PeriodicMachine.Event>

    private let driver: LoopDriver

    init() {
        let driver = LoopDriver()
        self.driver = driver
        func mailbox<Event>(_ kind: Kind) -> LoopMailbox<Event> {
            LoopMailbox { first in driver.wake(first ? kind : nil) }
        }
        stream = mailbox(.stream)
        heartbeat = mailbox(.heartbeat)
        localSchedule = mailbox(.localSchedule)
        outboxRetry = mailbox(.outboxRetry)
        intakeRetry = mailbox(.intakeRetry)
        pingWake = mailbox(.pingWake)
        batch = mailbox(.batch)
        sessionHeartbeat = mailbox(.sessionHeartbeat)
    }

    /// Sets the loop of each kind (``MachineLoop/run(_:mailbox:perform:)`` on that kind's mailbox), once, before any
    /// message is sent.
    func install(_ loop: @escaping @Sendable (Kind) async -> Void) {
        driver.install(loop)
    }

    /// Marks the group as driven by the caller's ``drive()`` (call it before any message is sent, so no owner task is
    /// made). False when it is driven already or shut down.
    func claim() -> Bool { driver.claim() }

    /// Runs the loops until ``shutdown()`` or until the calling task is cancelled; returns when every loop has ended.
    func drive() async {
        await driver.drive()
        shutdown()
    }

    /// Halts the loops of `kinds` at once and returns when each has ended its work.
    func halt(_ kinds: Set<Kind>) async {
        await withDiscardingTaskGroup { group in
            for kind in kinds {
                let loop = control(kind)
                group.addTask { await loop.halt() }
            }
        }
    }

    /// Ends every loop (each ends its work first) and the owner task; messages sent afterwards are dropped, and halts
    /// return at once.
    func shutdown() {
        driver.shutdown()
        for kind in Kind.allCases { control(kind).finish() }
    }

    /// The mailbox of `kind`, as what halts and ends its loop.
    private func control(_ kind: Kind) -> any LoopControl {
        switch kind {
        case .stream: stream
        case .heartbeat: heartbeat
        case .localSchedule: localSchedule
        case .outboxRetry: outboxRetry
        case .intakeRetry: intakeRetry
        case .pingWake: pingWake
        case .batch: batch
        case .sessionHeartbeat: sessionHeartbeat
        }
    }
}

/// Who drives the loops' task group: the caller of `run()` (``claim()`` then ``drive()``), or an owner task made the
/// first time a loop is sent a message without one. The group starts a kind's loop when that kind is first sent a
/// message (the kinds to start come through `starts`).
final class LoopDriver: Sendable {
    private struct State {
        var loop: (@Sendable (ClientRuntime.Kind) async -> Void)?
        var claimed = false
        var closed = false
        var owner: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let starts: AsyncStream<ClientRuntime.Kind>
    private let startsContinuation: AsyncStream<ClientRuntime.Kind>.Continuation

    init() {
        (starts, startsContinuation) = AsyncStream.makeStream()
    }

    func install(_ loop: @escaping @Sendable (ClientRuntime.Kind) async -> Void) {
        state.withLock { $0.loop = loop }
    }

    func claim() -> Bool {
        state.withLock { state in
            guard !state.claimed, !state.closed else { return false }
            state.claimed = true
            return true
        }
    }

    /// Runs each kind's loop from its first message; returns when the starts end (shutdown) or the task is cancelled,
    /// and every loop has ended.
    func drive() async {
        guard let loop = state.withLock({ $0.closed ? nil : $0.loop }) else { return }
        await withDiscardingTaskGroup { group in
            for await kind in starts {
                group.addTask { await loop(kind) }
            }
            group.cancelAll()
        }
    }

    /// A message was sent: the loops are driven (an owner task is made when nobody drives them), and `kind`'s loop,
    /// when this was its first message, starts.
    func wake(_ kind: ClientRuntime.Kind?) {
        if let kind { startsContinuation.yield(kind) }
        state.withLock { state in
            guard !state.claimed, !state.closed, state.loop != nil else { return }
            state.claimed = true
            state.owner = Task { await self.drive() }
        }
    }

    func shutdown() {
        startsContinuation.finish()
        let owner = state.withLock { state in
            state.closed = true
            defer { state.owner = nil }
            return state.owner
        }
        owner?.cancel()
    }
}
