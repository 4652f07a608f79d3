import Testing
@testable import ClientSDK

/// ``OutboxRetryMachine``, transition by transition.
@Suite struct OutboxRetryMachineTests {
    /// A wait drawn after the `failures`-th failure lies in the upper half of 0.5 s · 2^(failures−1), capped at 60 s.
    static func isBackoff(_ wait: Duration, failures: Int) -> Bool {
        let ceiling = min(Duration.milliseconds(500) * (1 << (failures - 1)), .seconds(60))
        return wait >= ceiling / 2 && wait <= ceiling
    }

    @Test func aRequestStartsOneLoopThatWaitsFirst() {
        var machine = OutboxRetryMachine()
        guard case .startLoop(let wait) = machine.event(.requested) else { Issue.record("no loop started"); return }
        #expect(Self.isBackoff(wait, failures: 1))
        #expect(machine.state == .waiting)
        // More failures while it waits ride on the same loop.
        #expect(machine.event(.requested) == .none)
        #expect(machine.event(.waitOver) == .attempt)
        #expect(machine.state == .attempting(again: false))
    }

    @Test func anAttemptThatSentEverythingEndsTheLoopAndResetsTheBackoff() {
        var machine = OutboxRetryMachine()
        _ = machine.event(.requested)
        _ = machine.event(.waitOver)
        #expect(machine.event(.attempted(allDone: true)) == .finish)
        #expect(machine.state == .idle && machine.failures == 0)
        // The next failure starts a new loop from the shortest wait.
        guard case .startLoop(let wait) = machine.event(.requested) else { Issue.record("no loop started"); return }
        #expect(Self.isBackoff(wait, failures: 1))
    }

    @Test func anAttemptThatLeftSomethingWaitsLongerEachTimeUpToTheCap() {
        var machine = OutboxRetryMachine()
        _ = machine.event(.requested)
        for failures in 2...12 {
            _ = machine.event(.waitOver)
            guard case .wait(let wait) = machine.event(.attempted(allDone: false)) else { Issue.record("no wait"); return }
            #expect(Self.isBackoff(wait, failures: failures), "after \(failures) failures: \(wait)")
        }
        #expect(machine.failures == 12)
    }

    @Test func aRequestDuringAnAttemptIsNotLostWhenTheAttemptFoundNothingLeft() {
        // The lost wake-up: the attempt listed the outbox, a submit failed and asked for a retry, then the attempt
        // reported "all done". The old loop ended and the new file waited for the next start.
        var machine = OutboxRetryMachine()
        _ = machine.event(.requested)
        _ = machine.event(.waitOver)
        #expect(machine.event(.requested) == .none)
        #expect(machine.state == .attempting(again: true))
        guard case .wait = machine.event(.attempted(allDone: true)) else { Issue.record("the loop ended"); return }
        #expect(machine.state == .waiting)
        #expect(machine.event(.waitOver) == .attempt)
        #expect(machine.event(.attempted(allDone: true)) == .finish)
    }

    @Test func stoppingForgetsTheLoopAndItsBackoff() {
        var machine = OutboxRetryMachine()
        _ = machine.event(.requested)
        _ = machine.event(.waitOver)
        _ = machine.event(.attempted(allDone: false))
        #expect(machine.event(.stopped) == .none)
        #expect(machine.state == .idle && machine.failures == 0)
        // A cancelled loop reporting on its way out ends; it does not drive the next loop's state.
        #expect(machine.event(.waitOver) == .finish)
        #expect(machine.event(.attempted(allDone: false)) == .finish)
        #expect(machine.state == .idle)
        guard case .startLoop = machine.event(.requested) else { Issue.record("no loop started after stop"); return }
    }
}
