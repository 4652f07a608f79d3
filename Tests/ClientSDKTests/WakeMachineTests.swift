import Testing
@testable import ClientSDK

/// ``WakeMachine``, transition by transition.
@Suite struct WakeMachineTests {
    @Test func aWakeUpComesWhenItsWaitIsOver() {
        var machine = WakeMachine()
        #expect(machine.isIdle)
        #expect(machine.event(.schedule(after: .seconds(2))) == .wait(.seconds(2), generation: 1))
        #expect(!machine.isIdle)
        #expect(machine.event(.due(generation: 1)) == .wake)
        #expect(machine.isIdle)
        #expect(machine.event(.due(generation: 1)) == .none, "one wake-up per schedule")
    }

    @Test func aLaterScheduleReplacesTheWaitingOne() {
        var machine = WakeMachine()
        _ = machine.event(.schedule(after: .seconds(10)))
        #expect(machine.event(.schedule(after: .seconds(1))) == .wait(.seconds(1), generation: 2))
        #expect(machine.event(.due(generation: 2)) == .wake)
        #expect(machine.event(.due(generation: 1)) == .none, "the replaced wait is ignored when it runs out")
    }

    @Test func aHaltDropsTheWaitingWakeUp() {
        var machine = WakeMachine()
        _ = machine.event(.schedule(after: .seconds(1)))
        machine.halted()
        #expect(machine.isIdle)
        #expect(machine.event(.due(generation: 1)) == .none)
    }
}
