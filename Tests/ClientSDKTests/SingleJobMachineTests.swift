import Testing
@testable import ClientSDK

/// ``SingleJobMachine``, transition by transition.
@Suite struct SingleJobMachineTests {
    @Test func oneJobAtATime() {
        var machine = SingleJobMachine()
        #expect(machine.isIdle)
        #expect(machine.event(.requested) == .run)
        #expect(machine.event(.requested) == .none)
        #expect(!machine.isIdle)
        #expect(machine.event(.finished) == .none)
        #expect(machine.isIdle)
        #expect(machine.event(.requested) == .run)
    }

    @Test func aHaltedJobCanRunAgain() {
        var machine = SingleJobMachine()
        _ = machine.event(.requested)
        machine.halted()
        #expect(machine.isIdle)
        #expect(machine.event(.requested) == .run)
    }
}
