import Foundation

/// The client's loops (``ClientRuntime``): what each performs for its machine's actions. A loop holds the client only
/// for a call, never across a wait: a client dropped without `close()` is freed, and its deinit ends the loops.
extension SurveyClient {
    /// The loop of each kind for `client` (``ClientRuntime`` runs it as a child of its task group, from the first message
    /// the kind is sent until the client closes).
    static func loops(of client: SurveyClient) -> @Sendable (ClientRuntime.Kind) async -> Void {
        let runtime = client.runtime
        let heartbeatInterval = client.configuration.heartbeatInterval
        let sessionInterval = client.configuration.telemetry.sessionHeartbeat
        let stream = streamLoop(of: client)
        let client = WeakReference(client)
        return { kind in
            switch kind {
            case .stream:
                await stream()
            case .batch:
                await MachineLoop.single(runtime.batch) { _ = try? await client.object?.submitEventsPing(reason: "max_capacity") }
            case .heartbeat:
                await MachineLoop.periodic(runtime.heartbeat) { _ in
                    guard let held = client.object, let heartbeatInterval else { return nil }
                    await held.heartbeatTick()
                    return heartbeatInterval
                }
            case .localSchedule:
                await MachineLoop.periodic(runtime.localSchedule) { _ in
                    guard let held = client.object else { return nil }
                    await held.localScheduleTick()
                    return DeviceSchedule.tickInterval
                }
            case .intakeRetry:
                await MachineLoop.periodic(runtime.intakeRetry) { _ in await client.object?.runDueRetries() }
            case .sessionHeartbeat:
                await MachineLoop.periodic(runtime.sessionHeartbeat) { session in
                    guard let held = client.object, let sessionInterval else { return nil }
                    return await held.sessionHeartbeatDue(session: session) ? sessionInterval : nil
                }
            case .outboxRetry:
                await MachineLoop.run(OutboxRetryMachine(), mailbox: runtime.outboxRetry) { action in
                    switch action {
                    case .none, .finish: .none
                    case .startLoop(let wait), .wait(let wait): .after(wait, .waitOver)
                    case .attempt: .run {
                        guard let held = client.object else { return nil }
                        return .attempted(allDone: await held.attemptOutboxes())
                    }
                    }
                }
            case .pingWake:
                await MachineLoop.run(WakeMachine(), mailbox: runtime.pingWake) { action in
                    switch action {
                    case .none: .none
                    case .wait(let wait, let generation): .after(wait, .due(generation: generation))
                    case .wake: .run {
                        await client.object?.pingWakeDue()
                        return nil
                    }
                    }
                }
            }
        }
    }
}
