import SurveyWire
import Testing
@testable import ClientSDK

/// ``PushStreamMachine``, transition by transition: the push stream's loop decides here, and the client only performs
/// what it is told.
@Suite struct PushStreamMachineTests {
    typealias Machine = PushStreamMachine

    /// A machine started and connected (streaming), with its run number.
    func streaming(_ random: inout SeededRandom) -> (Machine, Int) {
        var machine = Machine()
        let (run, _) = machine.start()
        #expect(machine.event(.connected, run: run, using: &random) == .read)
        return (machine, run)
    }

    @Test func startConnectsWithoutAResumePointTheFirstTime() {
        var machine = Machine()
        #expect(!machine.isRunning)
        let (run, action) = machine.start()
        #expect(run == 1)
        #expect(action == .connect(lastEventID: nil))
        #expect(machine.state == .connecting)
        #expect(machine.isRunning)
    }

    @Test func aConnectedStreamIsRead() {
        var random = SeededRandom(seed: 1)
        let (machine, _) = streaming(&random)
        #expect(machine.state == .streaming)
    }

    @Test func aStreamThatEndedReconnectsAfterAShortJitterOnly() {
        var random = SeededRandom(seed: 2)
        for dead in [false, true] {
            var (machine, run) = streaming(&random)
            guard case .wait(let wait, let reconnecting) = machine.event(.ended(dead: dead), run: run, using: &random) else {
                Issue.record("an ended stream must wait")
                return
            }
            #expect(wait >= .milliseconds(20) && wait <= .milliseconds(100))
            // Only a stream that went silent is reported (the app sees `streamReconnecting(reason: "dead")`).
            #expect(reconnecting == dead)
            #expect(machine.state == .waiting)
            #expect(machine.event(.waitOver, run: run, using: &random) == .connect(lastEventID: nil))
            #expect(machine.state == .connecting)
        }
    }

    @Test func failedConnectsBackOffDoublingToFiveSecondsAndASuccessResetsIt() {
        var random = SeededRandom(seed: 3)
        var machine = Machine()
        let (run, _) = machine.start()
        var ceilings: [Duration] = []
        for attempt in 0..<10 {
            let event: Machine.Event = attempt.isMultiple(of: 2) ? .failed : .refused(status: 503)
            guard case .wait(let wait, reconnecting: false) = machine.event(event, run: run, using: &random) else {
                Issue.record("a failed connect must wait")
                return
            }
            ceilings.append(machine.connectBackoff.ceiling)
            #expect(wait <= machine.connectBackoff.ceiling && wait >= machine.connectBackoff.ceiling / 2)
            #expect(machine.event(.waitOver, run: run, using: &random) == .connect(lastEventID: nil))
        }
        #expect(ceilings.prefix(6) == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .milliseconds(3200)])
        #expect(ceilings.suffix(4).allSatisfy { $0 == .seconds(5) })
        #expect(machine.event(.connected, run: run, using: &random) == .read)
        #expect(machine.connectBackoff.failures == 0)
        // A read that fails right away starts again from 0.1 s.
        guard case .wait(let wait, _) = machine.event(.failed, run: run, using: &random) else {
            Issue.record("a failed read must wait")
            return
        }
        #expect(wait <= .milliseconds(100))
    }

    @Test func aGoneTokenIsRenewedAndReportedOnceThenStreamedOn() {
        var random = SeededRandom(seed: 4)
        for status in [404, 410] {
            var machine = Machine()
            let (run, _) = machine.start()
            #expect(machine.event(.tokenGone(status: status), run: run, using: &random) == .renew(mint: true, reportGone: status))
            #expect(machine.state == .renewing(minted: false))
            #expect(machine.event(.renewed, run: run, using: &random) == .connect(lastEventID: nil))
            #expect(machine.state == .connecting)
        }
    }

    @Test func aFailingRenewalMintsOnceThenOnlyRetriesTellingTheServer() {
        var random = SeededRandom(seed: 5)
        var machine = Machine()
        let (run, _) = machine.start()
        _ = machine.event(.tokenGone(status: 410), run: run, using: &random)
        // The relay was down: nothing minted, so the next attempt mints.
        guard case .wait(let first, reconnecting: false) = machine.event(.renewalFailed(minted: false), run: run, using: &random) else {
            Issue.record("a failed renewal must wait")
            return
        }
        #expect(first >= .milliseconds(250) && first <= .milliseconds(500))
        #expect(machine.state == .renewalWaiting(minted: false))
        #expect(machine.event(.waitOver, run: run, using: &random) == .renew(mint: true, reportGone: nil))
        // Minted, but the server was down: the next attempts only tell the server, with a growing wait, and the gone
        // status is not reported again.
        for failures in 2...4 {
            guard case .wait = machine.event(.renewalFailed(minted: true), run: run, using: &random) else {
                Issue.record("a failed renewal must wait")
                return
            }
            #expect(machine.renewalBackoff.failures == failures)
            #expect(machine.event(.waitOver, run: run, using: &random) == .renew(mint: false, reportGone: nil))
        }
        #expect(machine.event(.renewed, run: run, using: &random) == .connect(lastEventID: nil))
        #expect(machine.renewalBackoff.failures == 0)
    }

    @Test func theResumePointIsTheLastPushHandledUnlessOneFailedSince() {
        var random = SeededRandom(seed: 6)
        var (machine, run) = streaming(&random)
        machine.handled("m1")
        machine.handled("m2")
        #expect(machine.resumePoint == "m2")
        _ = machine.event(.ended(dead: false), run: run, using: &random)
        #expect(machine.event(.waitOver, run: run, using: &random) == .connect(lastEventID: "m2"))
        _ = machine.event(.connected, run: run, using: &random)
        // m3's fetch failed: without a resume point the relay sends the unacked m3 again.
        machine.handleFailed()
        machine.handled("m4")
        _ = machine.event(.failed, run: run, using: &random)
        #expect(machine.event(.waitOver, run: run, using: &random) == .connect(lastEventID: nil))
        // Connected again: the relay resent what was unacked, so resuming is allowed again.
        _ = machine.event(.connected, run: run, using: &random)
        #expect(machine.resumePoint == "m4")
    }

    @Test func theResumePointOutlivesARenewalAndAStop() {
        var random = SeededRandom(seed: 7)
        var (machine, run) = streaming(&random)
        machine.handled("m1")
        _ = machine.event(.failed, run: run, using: &random)
        _ = machine.event(.waitOver, run: run, using: &random)
        _ = machine.event(.tokenGone(status: 410), run: run, using: &random)
        #expect(machine.event(.renewed, run: run, using: &random) == .connect(lastEventID: "m1"))
        machine.stop()
        #expect(machine.start().action == .connect(lastEventID: "m1"))
    }

    /// Issue 34: `stop()` during `start()` left a stream running. A stopped loop's later events end it and change
    /// nothing.
    @Test func afterAStopEveryEventEndsTheLoop() {
        var random = SeededRandom(seed: 8)
        let events: [Machine.Event] = [.connected, .refused(status: 500), .tokenGone(status: 410), .failed, .ended(dead: true),
                                       .waitOver, .renewed, .renewalFailed(minted: true)]
        for event in events {
            var (machine, run) = streaming(&random)
            machine.stop()
            #expect(machine.event(event, run: run, using: &random) == .finish, "\(event)")
            #expect(machine.state == .idle)
        }
    }

    /// A loop cancelled by `stop()` that had not ended when the client started again must not drive the new loop's
    /// stream: its events belong to an older run.
    @Test func anOlderRunsEventsEndThatLoopAndLeaveTheNewOneAlone() {
        var random = SeededRandom(seed: 9)
        var machine = Machine()
        let old = machine.start().run
        machine.stop()
        let (new, action) = machine.start()
        #expect(new == old + 1)
        #expect(action == .connect(lastEventID: nil))
        #expect(machine.event(.connected, run: old, using: &random) == .finish)
        #expect(machine.state == .connecting)
        #expect(machine.event(.connected, run: new, using: &random) == .read)
        #expect(machine.event(.ended(dead: true), run: old, using: &random) == .finish)
        #expect(machine.state == .streaming)
    }

    /// Events that cannot happen in a state (a report of the wrong action) end the loop rather than guess.
    @Test func anEventOutOfOrderEndsTheLoop() {
        var random = SeededRandom(seed: 10)
        var machine = Machine()
        let (run, _) = machine.start()
        #expect(machine.event(.waitOver, run: run, using: &random) == .finish)
        #expect(machine.event(.ended(dead: false), run: run, using: &random) == .finish)
        #expect(machine.event(.renewed, run: run, using: &random) == .finish)
        #expect(machine.state == .connecting)
        _ = machine.event(.connected, run: run, using: &random)
        #expect(machine.event(.tokenGone(status: 410), run: run, using: &random) == .finish)
        #expect(machine.event(.connected, run: run, using: &random) == .finish)
        #expect(machine.state == .streaming)
    }
}
