import Testing
@testable import ClientSDK

/// ``PeriodicMachine``, transition by transition.
@Suite struct PeriodicMachineTests {
    @Test func aBeginWithNoWaitTicksAtOnceThenWaitsAsEachTickSays() {
        var machine = PeriodicMachine()
        #expect(machine.isIdle)
        #expect(machine.event(.begin(firstWait: .zero, tag: 7)) == .tick(tag: 7))
        #expect(machine.state == .ticking)
        #expect(machine.event(.ticked(next: .seconds(5))) == .wait(.seconds(5)))
        #expect(machine.event(.due) == .tick(tag: 7))
        #expect(machine.event(.ticked(next: nil)) == .none)
        #expect(machine.isIdle)
    }

    @Test func aBeginWithAWaitWaitsFirst() {
        var machine = PeriodicMachine()
        #expect(machine.event(.begin(firstWait: .seconds(30))) == .wait(.seconds(30)))
        #expect(machine.state == .waiting)
        #expect(machine.event(.due) == .tick(tag: 0))
    }

    @Test func aBeginWhileRunningDoesNothing() {
        var machine = PeriodicMachine()
        _ = machine.event(.begin(firstWait: .seconds(1), tag: 1))
        #expect(machine.event(.begin(firstWait: .zero, tag: 2)) == .none)
        #expect(machine.event(.due) == .tick(tag: 1), "the running loop keeps its tag")
        #expect(machine.event(.begin(firstWait: .zero, tag: 2)) == .none)
    }

    @Test func reportsThatDoNotFitAreIgnored() {
        var machine = PeriodicMachine()
        #expect(machine.event(.due) == .none)
        #expect(machine.event(.ticked(next: .seconds(1))) == .none)
        _ = machine.event(.begin(firstWait: .seconds(1)))
        #expect(machine.event(.ticked(next: .seconds(1))) == .none)
        _ = machine.event(.due)
        #expect(machine.event(.due) == .none)
    }

    @Test func aHaltRestsItAndTheNextBeginStartsAfresh() {
        var machine = PeriodicMachine()
        _ = machine.event(.begin(firstWait: .zero, tag: 1))
        machine.halted()
        #expect(machine.isIdle)
        #expect(machine.event(.begin(firstWait: .zero, tag: 2)) == .tick(tag: 2))
    }
}
