import SurveyWire
import Testing
@testable import ClientSDK

/// ``PushStreamMachine``, transition by transition: the push stream's loop decides here, and the client only performs
/// what it is told.
@Suite struct PushStreamMachineTests {
    typealias Machine = PushStreamMachine

    /// A machine started and connected (streaming).
    func streaming(_ random: inout SeededRandom) -> Machine {
        var machine = Machine()
        _ = machine.start()
        #expect(machine.event(.connected, using: &random) == .read)
        return machine
    }

    @Test func startConnects() {
        var machine = Machine()
        #expect(machine.state == .idle)
        #expect(machine.start() == .connect)
        #expect(machine.state == .connecting)
    }

    @Test func aConnectedStreamIsRead() {
        var random = SeededRandom(seed: 1)
        let machine = streaming(&random)
        #expect(machine.state == .streaming)
    }

    @Test func aStreamThatEndedReconnectsAfterAShortJitterOnly() {
        var random = SeededRandom(seed: 2)
        for dead in [false, true] {
            var machine = streaming(&random)
            guard case .wait(let wait, let reconnecting) = machine.event(.ended(dead: dead), using: &random) else {
                Issue.record("an ended stream must wait")
                return
            }
            #expect(wait >= .milliseconds(20) && wait <= .milliseconds(100))
            // Only a stream that went silent is reported (the app sees `streamReconnecting(reason: "dead")`).
            #expect(reconnecting == dead)
            #expect(machine.state == .waiting)
            #expect(machine.event(.waitOver, using: &random) == .connect)
            #expect(machine.state == .connecting)
        }
    }

    @Test func failedConnectsBackOffDoublingToFiveSecondsAndASuccessResetsIt() {
        var random = SeededRandom(seed: 3)
        var machine = Machine()
        _ = machine.start()
        var ceilings: [Duration] = []
        for attempt in 0..<10 {
            let event: Machine.Event = attempt.isMultiple(of: 2) ? .failed : .refused(status: 503)
            guard case .wait(let wait, reconnecting: false) = machine.event(event, using: &random) else {
                Issue.record("a failed connect must wait")
                return
            }
            ceilings.append(machine.connectBackoff.ceiling)
            #expect(wait <= machine.connectBackoff.ceiling && wait >= machine.connectBackoff.ceiling / 2)
            #expect(machine.event(.waitOver, using: &random) == .connect)
        }
        #expect(ceilings.prefix(6) == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .milliseconds(3200)])
        #expect(ceilings.suffix(4).allSatisfy { $0 == .seconds(5) })
        #expect(machine.event(.connected, using: &random) == .read)
        #expect(machine.connectBackoff.failures == 0)
        // A read that fails right away starts again from 0.1 s.
        guard case .wait(let wait, _) = machine.event(.failed, using: &random) else {
            Issue.record("a failed read must wait")
            return
        }
        #expect(wait <= .milliseconds(100))
    }

    @Test func aGoneTokenIsRenewedAndReportedOnceThenStreamedOn() {
        var random = SeededRandom(seed: 4)
        for status in [404, 410] {
            var machine = Machine()
            _ = machine.start()
            #expect(machine.event(.tokenGone(status: status), using: &random) == .renew(mint: true, reportGone: status))
            #expect(machine.state == .renewing(minted: false))
            #expect(machine.event(.renewed, using: &random) == .connect)
            #expect(machine.state == .connecting)
        }
    }

    @Test func aFailingRenewalMintsOnceThenOnlyRetriesTellingTheServer() {
        var random = SeededRandom(seed: 5)
        var machine = Machine()
        _ = machine.start()
        _ = machine.event(.tokenGone(status: 410), using: &random)
        // The relay was down: nothing minted, so the next attempt mints.
        guard case .wait(let first, reconnecting: false) = machine.event(.renewalFailed(minted: false), using: &random) else {
            Issue.record("a failed renewal must wait")
            return
        }
        #expect(first >= .milliseconds(250) && first <= .milliseconds(500))
        #expect(machine.state == .renewalWaiting(minted: false))
        #expect(machine.event(.waitOver, using: &random) == .renew(mint: true, reportGone: nil))
        // Minted, but the server was down: the next attempts only tell the server, with a growing wait, and the gone
        // status is not reported again.
        for failures in 2...4 {
            guard case .wait = machine.event(.renewalFailed(minted: true), using: &random) else {
                Issue.record("a failed renewal must wait")
                return
            }
            #expect(machine.renewalBackoff.failures == failures)
            #expect(machine.event(.waitOver, using: &random) == .renew(mint: false, reportGone: nil))
        }
        #expect(machine.event(.renewed, using: &random) == .connect)
        #expect(machine.renewalBackoff.failures == 0)
    }

    /// Events that cannot happen in a state (a report of the wrong action) end the stream rather than guess: the machine
    /// rests until the next `begin`.
    @Test func anEventOutOfOrderEndsTheStream() {
        var random = SeededRandom(seed: 10)
        for wrong in [Machine.Event.waitOver, .ended(dead: false), .renewed, .renewalFailed(minted: false)] {
            var machine = Machine()
            _ = machine.event(.begin, using: &random)
            #expect(machine.event(wrong, using: &random) == .finish, "\(wrong) while connecting")
            #expect(machine.state == .idle)
            #expect(machine.event(.begin, using: &random) == .connect, "a begin after it starts again")
        }
        var machine = Machine()
        _ = machine.start()
        _ = machine.event(.connected, using: &random)
        #expect(machine.event(.tokenGone(status: 410), using: &random) == .finish)
        #expect(machine.state == .idle)
        // Nothing runs: a report now is out of order too.
        #expect(machine.event(.connected, using: &random) == .finish)
    }

    /// `begin` opens the stream once; while it opens, streams or waits, another `begin` does nothing.
    @Test func aBeginWhileTheStreamRunsDoesNothing() {
        var random = SeededRandom(seed: 11)
        var machine = Machine()
        #expect(machine.isIdle)
        #expect(machine.event(.begin, using: &random) == .connect)
        #expect(machine.event(.begin, using: &random) == .none)
        _ = machine.event(.connected, using: &random)
        #expect(machine.event(.begin, using: &random) == .none)
        _ = machine.event(.ended(dead: false), using: &random)
        #expect(machine.state == .waiting)
        #expect(machine.event(.begin, using: &random) == .none)
    }

    /// A halt (`stop()`) makes the machine new: its backoffs too.
    @Test func aHaltStartsAfresh() {
        var random = SeededRandom(seed: 12)
        var machine = Machine()
        _ = machine.event(.begin, using: &random)
        _ = machine.event(.refused(status: 503), using: &random)
        #expect(machine.connectBackoff.failures == 1)
        machine.halted()
        #expect(machine.isIdle)
        #expect(machine.connectBackoff.failures == 0)
        #expect(machine.event(.begin, using: &random) == .connect)
    }
}
