/// Runs one loop: reads its mailbox one message at a time, feeds each event to the machine, and performs the action
/// through `perform` (work runs as children of the loop's task group, and reports back through the mailbox). A halt
/// cancels the work, waits for it to end, resets the machine, calls `reset` (the loop's own I/O state, such as a
/// connection its work opened and the next work would have used), then acknowledges. Ends when the mailbox is finished or
/// the task is cancelled, with every piece of its work ended.
enum MachineLoop {
    static func run<Machine: LoopMachine>(_ machine: Machine, mailbox: LoopMailbox<Machine.Event>,
                                          reset: () -> Void = {},
                                          perform: @escaping @Sendable (Machine.Action) -> LoopWork<Machine.Event>) async {
        var machine = machine
        mailbox.loopBegan()
        var iterator = mailbox.messages.makeAsyncIterator()
        var epoch = 0
        var open = true
        while open {
            var ack: OneShot?
            // One run of the loop's work: from the last halt to the next.
            await withDiscardingTaskGroup { group in
                while let message = await iterator.next() {
                    switch message {
                    case .halt(let halt):
                        ack = halt
                        group.cancelAll()
                        return
                    case .event(let event, let from):
                        if let from, from != epoch { continue }
                        let work = perform(machine.event(event))
                        mailbox.noteIdle(machine.isIdle)
                        switch work {
                        case .none:
                            break
                        case .run(let body):
                            group.addTask { [epoch] in
                                if let reported = await body() { mailbox.report(reported, epoch: epoch) }
                            }
                        case .after(let wait, let reported):
                            group.addTask { [epoch] in
                                try? await Task.sleep(for: wait)
                                if !Task.isCancelled { mailbox.report(reported, epoch: epoch) }
                            }
                        }
                    }
                }
                // The mailbox was finished, or this task cancelled: the work ends with the loop.
                open = false
                group.cancelAll()
            }
            machine.halted()
            reset()
            mailbox.noteIdle(machine.isIdle)
            epoch += 1
            if let ack { mailbox.acknowledge(ack) }
        }
        mailbox.loopEnded()
    }
}

/// The two loop shapes several kinds share.
extension MachineLoop {
    /// A loop that ticks (``PeriodicMachine``); `tick` gets the run's tag and returns the wait before the next tick.
    static func periodic(_ mailbox: LoopMailbox<PeriodicMachine.Event>,
                         tick: @escaping @Sendable (Int) async -> Duration?) async {
        await run(PeriodicMachine(), mailbox: mailbox) { action in
            switch action {
            case .none: .none
            case .wait(let wait): .after(wait, .due)
            case .tick(let tag): .run { .ticked(next: await tick(tag)) }
            }
        }
    }

    /// A loop that runs one job at a time (``SingleJobMachine``).
    static func single(_ mailbox: LoopMailbox<SingleJobMachine.Event>, job: @escaping @Sendable () async -> Void) async {
        await run(SingleJobMachine(), mailbox: mailbox) { action in
            switch action {
            case .none: .none
            case .run: .run {
                await job()
                return .finished
            }
            }
        }
    }
}
