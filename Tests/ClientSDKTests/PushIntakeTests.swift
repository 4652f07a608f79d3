import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

@Suite struct PushIntakeTests {
    func push(_ surveys: [String], nonce: String = "n1") -> SurveyPush {
        var uuids: [String: [String]] = [:]
        for survey in surveys { uuids[survey] = ["u-\(survey)"] }
        return SurveyPush(surveyIDs: surveys, sentTime: "2026-05-04T14:00:00", nonce: nonce, surveyUUIDs: uuids)
    }

    @Test func aPushWhoseSurveysAreStoredIsAckedAtOnce() {
        var intake = PushIntake()
        var random = SeededRandom(seed: 1)
        let step1 = intake.received(messageID: "m1", push: push(["a", "b"]), nonceSeen: false, handled: { _ in false })
        #expect(step1 == .fetch(["a", "b"]))
        let step2 = intake.fetched(messageID: "m1", outcomes: ["a": .stored, "b": .stored], now: .now, random: &random)
        #expect(step2 == .done)
        #expect(intake.pending.isEmpty)
    }

    /// The poison push: a survey deleted after the push went out answers 404. That is final: the push is acked (before,
    /// it was never acked, and ten such pushes stalled the relay's backlog for the device).
    @Test func aWithdrawnSurveyIsFinalAndThePushIsAcked() {
        var intake = PushIntake()
        var random = SeededRandom(seed: 1)
        _ = intake.received(messageID: "m1", push: push(["gone", "live"]), nonceSeen: false, handled: { _ in false })
        let step3 = intake.fetched(messageID: "m1", outcomes: ["gone": .withdrawn, "live": .stored], now: .now, random: &random)
        #expect(step3 == .done)
        #expect(intake.pending.isEmpty)
    }

    /// A transient failure keeps the push for a retry on the live stream, with backoff; only the failed surveys are
    /// fetched again; the error is reported on the first failure only.
    @Test func aTransientFailureIsRetriedWithBackoffForTheFailedSurveysOnly() throws {
        var intake = PushIntake()
        var random = SeededRandom(seed: 1)
        let start = ContinuousClock.now
        _ = intake.received(messageID: "m1", push: push(["a", "b"]), nonceSeen: false, handled: { _ in false })
        guard case .retry(let first, true) = intake.fetched(messageID: "m1", outcomes: ["a": .stored, "b": .failed], now: start, random: &random) else {
            Issue.record("expected a retry")
            return
        }
        #expect(first >= .milliseconds(500) && first <= .seconds(1))
        let early = intake.takeDue(now: start)
        #expect(early.isEmpty)
        let due = intake.takeDue(now: start + first)
        #expect(due.count == 1 && due[0].messageID == "m1" && due[0].surveys == ["b"])
        // Being attempted: not due again until its outcome comes back.
        let duplicateTake = intake.takeDue(now: start + .seconds(100))
        #expect(duplicateTake.isEmpty)
        guard case .retry(let second, false) = intake.fetched(messageID: "m1", outcomes: ["b": .failed], now: start + first, random: &random) else {
            Issue.record("expected a second retry, not reported again")
            return
        }
        #expect(second >= .seconds(1) && second <= .seconds(2))
        #expect(intake.nextDue == start + first + second)
        _ = intake.takeDue(now: start + .seconds(10))
        let step4 = intake.fetched(messageID: "m1", outcomes: ["b": .stored], now: start + .seconds(10), random: &random)
        #expect(step4 == .done)
        #expect(intake.nextDue == nil && intake.pending.isEmpty)
    }

    @Test func duplicatesAndRedeliveriesAreRecognised() {
        var intake = PushIntake()
        // Its nonce was seen, or every occurrence was handled: a duplicate.
        let step5 = intake.received(messageID: "m1", push: push(["a"]), nonceSeen: true, handled: { _ in false })
        #expect(step5 == .duplicate)
        let step6 = intake.received(messageID: "m2", push: push(["a"]), nonceSeen: false, handled: { _ in true })
        #expect(step6 == .duplicate)
        // A redelivery of a push whose first survey was shown already: only the rest is fetched.
        let step7 = intake.received(messageID: "m3", push: push(["a", "b"]), nonceSeen: false, handled: { $0 == ["u-a"] })
        #expect(step7 == .fetch(["b"]))
        // The same message again while it is being fetched: nothing to do.
        #expect(intake.received(messageID: "m3", push: push(["a", "b"]), nonceSeen: false, handled: { _ in false }) == .inProgress)
        // The stream ended: the relay sends it again on the next connection, and it is taken afresh.
        intake.streamEnded()
        let step8 = intake.received(messageID: "m3", push: push(["a", "b"]), nonceSeen: false, handled: { _ in false })
        #expect(step8 == .fetch(["a", "b"]))
    }

    @Test func pendingPushesAreBounded() {
        var intake = PushIntake()
        var random = SeededRandom(seed: 1)
        for n in 0..<(PushIntake.maxPending + 20) {
            _ = intake.received(messageID: "m\(n)", push: push(["s\(n)"], nonce: "n\(n)"), nonceSeen: false, handled: { _ in false })
            _ = intake.fetched(messageID: "m\(n)", outcomes: ["s\(n)": .failed], now: .now, random: &random)
        }
        #expect(intake.pending.count == PushIntake.maxPending)
    }
}
