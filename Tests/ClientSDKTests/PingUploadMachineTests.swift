import Testing
@testable import ClientSDK

/// ``PingUploadMachine``, transition by transition.
@Suite struct PingUploadMachineTests {
    static let t0 = ContinuousClock.now

    @Test func aPingGoesAndItsEndSettlesTheQueue() {
        var machine = PingUploadMachine(limit: 10, interval: .seconds(60))
        #expect(machine.event(.next(id: "a", at: Self.t0)) == .upload)
        #expect(machine.inFlight == ["a"])
        #expect(machine.event(.finished(id: "a", .done)) == .settled)
        #expect(machine.inFlight.isEmpty)
    }

    @Test func aPingAnotherPassIsSendingIsSkipped() {
        var machine = PingUploadMachine(limit: 10, interval: .seconds(60))
        _ = machine.event(.next(id: "a", at: Self.t0))
        #expect(machine.event(.next(id: "a", at: Self.t0)) == .skip)
        // The skip took no slot of the rate limit: the next ping still goes.
        #expect(machine.event(.next(id: "b", at: Self.t0)) == .upload)
    }

    @Test func onlyTheLastUploadInFlightSettles() {
        var machine = PingUploadMachine(limit: 10, interval: .seconds(60))
        _ = machine.event(.next(id: "a", at: Self.t0))
        _ = machine.event(.next(id: "b", at: Self.t0))
        #expect(machine.event(.finished(id: "a", .failed)) == .none)
        #expect(machine.event(.finished(id: "b", .done)) == .settled)
    }

    @Test func anEndThatWasNotInFlightChangesNothing() {
        var machine = PingUploadMachine(limit: 10, interval: .seconds(60))
        #expect(machine.event(.finished(id: "ghost", .done)) == .none)
        #expect(!machine.routeMissing)
    }

    @Test func theRateLimitPausesThePassAndSetsOneWakeUpForTheWindowsEnd() {
        var machine = PingUploadMachine(limit: 2, interval: .seconds(60))
        #expect(machine.event(.next(id: "a", at: Self.t0)) == .upload)
        #expect(machine.event(.next(id: "b", at: Self.t0 + .seconds(10))) == .upload)
        #expect(machine.event(.next(id: "c", at: Self.t0 + .seconds(15))) == .pause(wake: .seconds(45)))
        #expect(machine.wakeScheduled)
        // A second pass meets the same limit: the wake-up set already serves it.
        #expect(machine.event(.next(id: "c", at: Self.t0 + .seconds(20))) == .pause(wake: nil))
        #expect(!machine.inFlight.contains("c"))
    }

    @Test func theWakeUpWalksTheQueueAgainOnceAndTheNewWindowLetsPingsGo() {
        var machine = PingUploadMachine(limit: 1, interval: .seconds(60))
        _ = machine.event(.next(id: "a", at: Self.t0))
        _ = machine.event(.next(id: "b", at: Self.t0 + .seconds(1)))
        #expect(machine.event(.wakeDue) == .walk)
        #expect(!machine.wakeScheduled)
        #expect(machine.event(.wakeDue) == .none)
        #expect(machine.event(.next(id: "b", at: Self.t0 + .seconds(61))) == .upload)
    }

    @Test func aMissingRouteHaltsThisPassAndEveryLaterOne() {
        var machine = PingUploadMachine(limit: 10, interval: .seconds(60))
        _ = machine.event(.next(id: "a", at: Self.t0))
        #expect(machine.event(.finished(id: "a", .routeMissing)) == .settled)
        #expect(machine.routeMissing)
        #expect(machine.event(.next(id: "b", at: Self.t0)) == .halt)
        #expect(machine.event(.next(id: "a", at: Self.t0)) == .halt)
    }

    @Test func aWakeUpAfterTheRouteWentMissingWalksNothing() {
        var machine = PingUploadMachine(limit: 1, interval: .seconds(60))
        _ = machine.event(.next(id: "a", at: Self.t0))
        _ = machine.event(.next(id: "b", at: Self.t0))
        _ = machine.event(.finished(id: "a", .routeMissing))
        #expect(machine.event(.wakeDue) == .none)
    }

    @Test func stoppingForgetsTheCancelledWakeUpSoTheNextRunSetsItsOwn() {
        var machine = PingUploadMachine(limit: 1, interval: .seconds(60))
        _ = machine.event(.next(id: "a", at: Self.t0))
        _ = machine.event(.next(id: "b", at: Self.t0))
        #expect(machine.event(.stopped) == .none)
        #expect(!machine.wakeScheduled)
        // A late wake-up of the stopped run walks nothing; the next limit sets a new one.
        #expect(machine.event(.wakeDue) == .none)
        guard case .pause(let wake?) = machine.event(.next(id: "b", at: Self.t0 + .seconds(1))) else {
            Issue.record("no new wake-up")
            return
        }
        #expect(wake == .seconds(59))
    }
}
