import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

/// The SDK's value-type state machines, every transition walked (the I/O is the client's; these only decide).
@Suite struct BackoffTests {
    @Test func waitsDoubleWithinTheUpperHalfUpToTheCapAndResetAfterSuccess() {
        var backoff = Backoff(base: .milliseconds(100), cap: .seconds(1))
        var random = SeededRandom(seed: 7)
        #expect(backoff.ceiling == .zero)
        let ceilings: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)]
        for ceiling in ceilings {
            let wait = backoff.failed(using: &random)
            #expect(backoff.ceiling == ceiling)
            #expect(wait >= ceiling / 2 && wait <= ceiling, "\(wait) outside the upper half of \(ceiling)")
        }
        // Far past the cap the exponent cannot overflow.
        for _ in 0..<100 { _ = backoff.failed(using: &random) }
        #expect(backoff.ceiling == .seconds(1))
        backoff.reset()
        #expect(backoff.failures == 0)
        #expect(backoff.failed(using: &random) <= .milliseconds(100))
    }
}

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

@Suite struct RelayLinkTests {
    @Test func aTokenCountsAsKnownOnlyOnceTheServerAcceptedThatToken() {
        var link = RelayLink()
        #expect(!link.needsAnnouncement(registered: true))
        link.obtained("t1")
        #expect(!link.serverKnows)
        #expect(!link.needsAnnouncement(registered: false), "nothing to tell before registration")
        #expect(link.needsAnnouncement(registered: true))
        link.serverAccepted("t1")
        #expect(link.serverKnows && !link.needsAnnouncement(registered: true))
    }

    /// Registration sent t1; the relay rotated to t2 while it was in flight. The server holds t1: t2 must be announced.
    @Test func aRotationDuringRegistrationLeavesTheNewTokenToAnnounce() {
        var link = RelayLink()
        link.obtained("t1")
        let sent = link.token!
        link.obtained("t2")
        link.serverAccepted(sent)
        #expect(link.token == "t2" && !link.serverKnows && link.needsAnnouncement(registered: true))
    }

    /// A crash between saving a new token and telling the server: what was saved says the server lacks it.
    @Test func aCrashBetweenSavingAndTellingIsFinishedAtTheNextStart() throws {
        var state = ClientState(deviceID: "d", passwordHash: "h", clientID: "c")
        state.registered = true
        state.link.obtained("t1")
        state.link.serverAccepted("t1")
        state.link.obtained("t2")
        let saved = try JSONEncoder().encode(state)
        let restored = try JSONDecoder().decode(ClientState.self, from: saved)
        #expect(restored.relayToken == "t2" && restored.announcedToken == "t1")
        #expect(restored.link.needsAnnouncement(registered: restored.registered))
    }
}

@Suite struct UploadOutboxTests {
    @Test func oneUploadPerFileAtATime() {
        var outbox = UploadOutbox()
        let first = outbox.begin("a.csv")
        let again = outbox.begin("a.csv")
        let other = outbox.begin("b.csv")
        #expect(first && other)
        #expect(!again, "the retry loop must not POST a file submit is uploading")
        outbox.end("a.csv")
        let afterEnd = outbox.begin("a.csv")
        #expect(afterEnd)
    }
}

@Suite struct ClientLifecycleTests {
    @Test func idleRunningClosedAndNothingAfterClosed() {
        var lifecycle = ClientLifecycle()
        #expect(lifecycle.phase == .idle)
        let started = lifecycle.starting()
        #expect(started && lifecycle.phase == .running)
        lifecycle.stopped()
        #expect(lifecycle.phase == .idle)
        let restarted = lifecycle.starting()
        let closed = lifecycle.closing()
        #expect(restarted && closed && lifecycle.isClosed)
        let closedAgain = lifecycle.closing()
        let startedAfterClose = lifecycle.starting()
        #expect(!closedAgain, "close runs its teardown once")
        #expect(!startedAfterClose, "a closed client does not start again")
        lifecycle.stopped()
        #expect(lifecycle.isClosed)
    }
}

@Suite struct ReceiptBoundTests {
    @Test func receiptsWaitingAreBounded() {
        var state = ClientState(deviceID: "d", passwordHash: "h", clientID: "c")
        state.addReceipts((0..<(ClientState.receiptLimit + 50)).map { "u\($0)" })
        state.addReceipts(["u100"])  // already waiting: not added twice
        #expect(state.pendingReceipts?.count == ClientState.receiptLimit)
        #expect(state.pendingReceipts?.first == "u50", "the oldest go first")
    }
}

/// The client's one task group: jobs cancelled one by one or all together, awaited, and none started after shutdown.
@Suite struct BackgroundTasksTests {
    /// Counts how many jobs are running, and lets a test wait until a job ended.
    final class Probe: Sendable {
        let started = Mutex(0)
        let ended = Mutex(0)
        func job() -> @Sendable () async -> Void {
            { [self] in
                started.withLock { $0 += 1 }
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                ended.withLock { $0 += 1 }
            }
        }
    }

    @Test func aJobCancelledAloneEndsWhileTheOthersRunAndShutdownEndsThemAll() async {
        let tasks = BackgroundTasks()
        let probe = Probe()
        let first = tasks.spawn(probe.job())
        let second = tasks.spawn(probe.job())
        let finishedAlone = Mutex(false)
        let oneShot = tasks.spawn { finishedAlone.withLock { $0 = true } }
        await oneShot.value
        #expect(finishedAlone.withLock { $0 })
        first.cancel()
        await first.value
        #expect(probe.ended.withLock { $0 } == 1)
        #expect(tasks.liveCount == 1)
        tasks.shutdown()
        await second.value
        #expect(probe.ended.withLock { $0 } == 2)
        // After shutdown nothing starts, and awaiting such a job does not hang.
        let late = tasks.spawn(probe.job())
        await late.value
        #expect(probe.started.withLock { $0 } == 2)
    }

    @Test func drivenByACallerTheJobsAreItsChildrenAndEndWhenItIsCancelled() async {
        let tasks = BackgroundTasks()
        let probe = Probe()
        #expect(tasks.claim())
        #expect(!tasks.claim())
        let jobs = (0..<3).map { _ in tasks.spawn(probe.job()) }
        let driver = Task { await tasks.drive() }
        while probe.started.withLock({ $0 }) < 3 { try? await Task.sleep(for: .milliseconds(5)) }
        driver.cancel()
        await driver.value
        // drive() returned only after its children ended: structured.
        #expect(probe.ended.withLock { $0 } == 3)
        for job in jobs { await job.value }
        let late = tasks.spawn(probe.job())
        await late.value
        #expect(probe.started.withLock { $0 } == 3)
    }

    @Test func aJobCancelledBeforeItStartsNeverRuns() async {
        let tasks = BackgroundTasks()
        #expect(tasks.claim())
        let ran = Mutex(false)
        let job = tasks.spawn { ran.withLock { $0 = true } }
        job.cancel()
        let driver = Task { await tasks.drive() }
        await job.value
        tasks.shutdown()
        await driver.value
        #expect(!ran.withLock { $0 })
    }
}

@Suite struct ServerRoutesTests {
    @Test func beiwesPageAndTheRoutersOwnCodesMeanTheRouteIsMissing() {
        // Beiwe's 404 page (no JSON code), an empty 405, our router's codes for an unknown path or method.
        for (status, code) in [(404, nil), (405, nil), (404, "not_found"), (405, "method_not_allowed")] as [(Int, String?)] {
            var routes = ServerRoutes()
            #expect(routes.answered(.downloadSurvey, status: status, errorCode: code) == .missing)
            #expect(routes.lacks(.downloadSurvey))
            #expect(!routes.lacks(.confirmNotifications))
        }
    }

    @Test func aRoutesOwnRefusalLeavesItPresent() {
        var routes = ServerRoutes()
        // The survey is gone (the route answered), a server error, a refused login, success.
        for (status, code) in [(404, "survey_not_found"), (500, nil), (403, nil), (401, "invalid_credentials"), (200, nil)] as [(Int, String?)] {
            #expect(routes.answered(.downloadSurvey, status: status, errorCode: code) == .present)
        }
        #expect(routes.missing.isEmpty)
    }

    @Test func aMissingRouteStaysMissingForTheRun() {
        var routes = ServerRoutes()
        _ = routes.answered(.confirmNotifications, status: 404, errorCode: nil)
        // A later answer cannot bring it back (the client no longer asks it).
        _ = routes.answered(.confirmNotifications, status: 200, errorCode: nil)
        #expect(routes.lacks(.confirmNotifications))
    }
}
