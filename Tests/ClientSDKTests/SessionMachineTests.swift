import Foundation
import Testing
@testable import ClientSDK

/// ``SessionMachine``, transition by transition, and the session's heartbeat on a client.
@Suite struct SessionMachineTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aClientMadeIsInTheBackgroundWithAnIdForMessagesShownBeforeAnySession() {
        let machine = SessionMachine(id: "made")
        #expect(machine.state == .inactive && !machine.isActive)
        #expect(machine.id == "made")
    }

    @Test func beginningOpensANumberedSessionWithItsIdAndStart() {
        var machine = SessionMachine(id: "made")
        #expect(machine.event(.began(startup: true, id: "s1", at: Self.t0)) == .open(session: 1, startup: true))
        #expect(machine.state == .active(number: 1, started: Self.t0))
        #expect(machine.isActive && machine.id == "s1")
    }

    @Test func beginningAgainWhileOpenChangesNothing() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        // A resume() while in the foreground: no second session, the same id and start.
        #expect(machine.event(.began(startup: false, id: "s2", at: Self.t0 + 5)) == .none)
        #expect(machine.state == .active(number: 1, started: Self.t0) && machine.id == "s1")
    }

    @Test func endingClosesWithTheWholeSecondsSinceTheStart() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        #expect(machine.event(.ended(at: Self.t0 + 42.9)) == .close(seconds: 42))
        #expect(machine.state == .inactive)
        // The id stays the last session's until the next one begins.
        #expect(machine.id == "s1")
    }

    @Test func aClockSetBackDuringTheSessionGivesZeroSecondsNotANegativeDuration() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        #expect(machine.event(.ended(at: Self.t0 - 3_600)) == .close(seconds: 0))
    }

    @Test func endingWhileInTheBackgroundChangesNothing() {
        var machine = SessionMachine(id: "made")
        #expect(machine.event(.ended(at: Self.t0)) == .none)
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        _ = machine.event(.ended(at: Self.t0 + 1))
        // pause() then stop(): the session ended once.
        #expect(machine.event(.ended(at: Self.t0 + 2)) == .none)
    }

    @Test func aResumeOpensTheNextNumberWithANewId() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        _ = machine.event(.ended(at: Self.t0 + 1))
        #expect(machine.event(.began(startup: false, id: "s2", at: Self.t0 + 10)) == .open(session: 2, startup: false))
        #expect(machine.state == .active(number: 2, started: Self.t0 + 10) && machine.id == "s2")
    }

    @Test func theOpenSessionsHeartbeatBeats() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        #expect(machine.event(.heartbeatDue(session: 1)) == .heartbeat)
        #expect(machine.event(.heartbeatDue(session: 1)) == .heartbeat)
        #expect(machine.state == .active(number: 1, started: Self.t0))
    }

    @Test func aHeartbeatAfterItsSessionEndedRecordsNothingAndEndsItsLoop() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        _ = machine.event(.ended(at: Self.t0 + 1))
        // The loop's tick had begun before the pause and reached the actor after it.
        #expect(machine.event(.heartbeatDue(session: 1)) == .endHeartbeat)
        #expect(machine.state == .inactive)
    }

    @Test func aHeartbeatOfAnEarlierSessionDoesNotBeatInTheNextOne() {
        var machine = SessionMachine(id: "made")
        _ = machine.event(.began(startup: true, id: "s1", at: Self.t0))
        _ = machine.event(.ended(at: Self.t0 + 1))
        _ = machine.event(.began(startup: false, id: "s2", at: Self.t0 + 2))
        #expect(machine.event(.heartbeatDue(session: 1)) == .endHeartbeat)
        #expect(machine.event(.heartbeatDue(session: 2)) == .heartbeat)
    }

    /// On a client: a tick of the first session's loop that reaches the actor after the pause, or in the next session,
    /// records nothing (it recorded an MMA `heartbeat` after `pauseSession` before the machine).
    @Test func aClientsLateHeartbeatTickRecordsNothing() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try TelemetryFlowTests.client(study) { $0.telemetry.sessionHeartbeat = .seconds(3_600) }
        try await client.start()
        #expect(await client.sessionHeartbeatDue(session: 1))
        let beat = await client.status().eventsWaiting
        await client.pause()
        let paused = await client.status().eventsWaiting
        #expect(await !client.sessionHeartbeatDue(session: 1))
        #expect(await client.status().eventsWaiting == paused)
        try await client.resume()
        let resumed = await client.status().eventsWaiting
        #expect(await !client.sessionHeartbeatDue(session: 1))
        #expect(await client.status().eventsWaiting == resumed)
        #expect(await client.sessionHeartbeatDue(session: 2))
        #expect(await client.status().eventsWaiting == resumed + 1)
        #expect(beat > 0)
        await client.close()
    }
}
