import Synchronization
import Testing
@testable import ClientSDK

/// ``MachineLoop`` and ``LoopMailbox``: messages one at a time in order, work beside the loop reporting back, halts
/// that end the work before they return, and reports of halted work dropped.
@Suite struct MachineLoopTests {
    /// Passes each event on as its action, so `perform` sees what the machine was fed, in order.
    struct Echo: LoopMachine {
        var busy = false
        mutating func event(_ event: String) -> String {
            busy = event != "rest"
            return event
        }
        mutating func halted() { busy = false }
        var isIdle: Bool { !busy }
    }

    /// What `perform` saw, and how many pieces of work started and ended.
    final class Seen: Sendable {
        let actions = Mutex<[String]>([])
        let started = Mutex(0)
        let ended = Mutex(0)
        var list: [String] { actions.withLock { $0 } }
        var endedCount: Int { ended.withLock { $0 } }
        var startedCount: Int { started.withLock { $0 } }

        /// `slow` runs until cancelled, then reports `late`; `quick` reports `done`; others do nothing.
        func perform(_ action: String) -> LoopWork<String> {
            actions.withLock { $0.append(action) }
            switch action {
            case "slow":
                return .run { [self] in
                    started.withLock { $0 += 1 }
                    while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
                    ended.withLock { $0 += 1 }
                    return "late"
                }
            case "quick": return .run { "done" }
            case "timer": return .after(.milliseconds(5), "rang")
            default: return .none
            }
        }
    }

    static func loop(_ mailbox: LoopMailbox<String>, _ seen: Seen) -> Task<Void, Never> {
        Task { await MachineLoop.run(Echo(), mailbox: mailbox) { seen.perform($0) } }
    }

    /// A loop whose `slow` work has started.
    static func runningSlow() async -> (LoopMailbox<String>, Seen, Task<Void, Never>) {
        let mailbox = LoopMailbox<String>()
        let seen = Seen()
        let loop = Self.loop(mailbox, seen)
        mailbox.send("slow")
        #expect(await MemoryStudy.eventually { seen.startedCount == 1 })
        return (mailbox, seen, loop)
    }

    @Test func eventsReachTheMachineInOrderAndWorkReportsBack() async {
        let mailbox = LoopMailbox<String>()
        let seen = Seen()
        let loop = Self.loop(mailbox, seen)
        mailbox.send("a")
        mailbox.send("quick")
        mailbox.send("timer")
        #expect(await MemoryStudy.eventually { seen.list.count == 5 })
        #expect(seen.list.prefix(2) == ["a", "quick"])
        #expect(Set(seen.list.dropFirst(2)) == ["timer", "done", "rang"])
        #expect(seen.list.firstIndex(of: "rang")! > seen.list.firstIndex(of: "timer")!)
        mailbox.finish()
        await loop.value
    }

    @Test func aHaltEndsTheWorkBeforeItReturnsAndDropsItsLateReport() async {
        let (mailbox, seen, loop) = await Self.runningSlow()
        #expect(!mailbox.isIdle)
        await mailbox.halt()
        #expect(seen.endedCount == 1, "halt() returned before the work ended")
        #expect(mailbox.isIdle, "the machine was not reset")
        // The work reported `late` on its way out: from a run the halt ended, so it never reaches the machine.
        mailbox.send("after")
        #expect(await MemoryStudy.eventually { seen.list.last == "after" })
        #expect(!seen.list.contains("late"))
        // The loop goes on: new work runs.
        mailbox.send("slow")
        #expect(await MemoryStudy.eventually { seen.startedCount == 2 })
        mailbox.finish()
        await loop.value
        #expect(seen.endedCount == 2, "the loop ended before its work")
    }

    @Test func aHaltResetsTheLoopsOwnStateAfterItsWorkEnded() async {
        let mailbox = LoopMailbox<String>()
        let seen = Seen()
        // What reset saw of the work when it ran (the work must have ended by then).
        let resets = Mutex<[Int]>([])
        let loop = Task {
            await MachineLoop.run(Echo(), mailbox: mailbox, reset: { resets.withLock { $0.append(seen.endedCount) } }) { seen.perform($0) }
        }
        mailbox.send("slow")
        #expect(await MemoryStudy.eventually { seen.startedCount == 1 })
        await mailbox.halt()
        #expect(resets.withLock { $0 } == [1])
        mailbox.finish()
        await loop.value
        #expect(resets.withLock { $0 } == [1, 1], "the loop's end resets too")
    }

    @Test func aHaltSentWithoutWaitingComesBeforeTheMessagesAfterIt() async {
        let (mailbox, seen, loop) = await Self.runningSlow()
        mailbox.haltSoon()
        mailbox.send("next")
        #expect(await MemoryStudy.eventually { seen.list.last == "next" })
        #expect(seen.endedCount == 1)
        mailbox.finish()
        await loop.value
    }

    @Test func aHaltOfAMailboxNeverSentAnythingReturnsAtOnceAndLeavesNothingQueued() async {
        // No loop reads it at all: the halt must not wait for one.
        let mailbox = LoopMailbox<String>()
        await mailbox.halt()
        mailbox.haltSoon()
        #expect(mailbox.isIdle)
        mailbox.finish()
        var left = 0
        for await _ in mailbox.messages { left += 1 }
        #expect(left == 0, "a halt was queued for a loop that never started")
    }

    @Test func aHaltAfterTheLoopEndedReturnsAndLaterMessagesAreDropped() async {
        let (mailbox, seen, loop) = await Self.runningSlow()
        loop.cancel()
        await loop.value
        #expect(seen.endedCount == 1, "a cancelled loop left its work running")
        await mailbox.halt()
        mailbox.send("dropped")
        #expect(!seen.list.contains("dropped"))
    }

    @Test func aHaltWaitingOnAMailboxNoLoopEverReadReturnsWhenItIsFinished() async {
        // The runtime shut down before the kind's loop started: finish() answers the halt the loop never will.
        let mailbox = LoopMailbox<String>()
        mailbox.send("a")
        let halting = Task { await mailbox.halt() }
        try? await Task.sleep(for: .milliseconds(20))
        #expect(!mailbox.hasLoop)
        mailbox.finish()
        await halting.value
    }

    @Test func aHaltWaitingWhenTheLoopEndsReturns() async {
        let mailbox = LoopMailbox<String>()
        let seen = Seen()
        mailbox.send("a")
        // The halt is queued behind nothing that reads it; the loop then starts and is cancelled at once.
        let halting = Task { await mailbox.halt() }
        try? await Task.sleep(for: .milliseconds(20))
        let loop = Self.loop(mailbox, seen)
        loop.cancel()
        await loop.value
        await halting.value
    }
}
