import Testing
@testable import TrioLoad

/// The one recorder both plug-ins report to, event by event.
@Suite struct LoadRecorderTests {
    let start = ContinuousClock.now
    var recorder: LoadRecorder { LoadRecorder(measuredFrom: start, windowEnd: start + .seconds(10)) }

    @Test func latencyRunsFromTheIntendedStartAndRowsAreByCompletion() {
        let r = recorder
        // Due at 0 but started 20 ms late (coordinated omission): the 20 ms count.
        r.begin(0, intended: start, late: true)
        r.ended(0, .succeeded, at: start + .milliseconds(1_520))
        let s = r.state.withLock { $0 }
        #expect(s.started == 1 && s.late == 1 && s.succeeded == 1 && s.completedInWindow == 1)
        #expect(s.overall.max >= 1_519_000 && s.overall.max <= 1_521_000)
        #expect(Array(s.seconds.keys) == [1])
        #expect(s.startedPerSecond == [0: 1])
        #expect(s.outstanding.isEmpty && s.running == 0)
    }

    @Test func warmUpIterationsRunAndAreNotMeasured() {
        let r = recorder
        r.begin(0, intended: start - .seconds(1), late: false)
        r.ended(0, .failed("x"), at: start)
        r.drop(intended: start - .milliseconds(1))
        let s = r.state.withLock { $0 }
        #expect(s.begun == 1 && s.started == 0 && s.failed == 0 && s.dropped == 0 && s.errors.isEmpty && s.overall.totalCount == 0)
    }

    @Test func failuresAreCountedByKeyWithTheirLatency() {
        let r = recorder
        r.begin(0, intended: start, late: false)
        r.ended(0, .failed("register_user:403:invalid_credentials"), at: start + .milliseconds(3))
        r.drop(intended: start + .milliseconds(1))
        let s = r.state.withLock { $0 }
        #expect(s.failed == 1 && s.succeeded == 0 && s.dropped == 1)
        #expect(s.errors == ["register_user:403:invalid_credentials": 1])
        #expect(s.seconds[0]?.failed == 1 && s.overall.totalCount == 1)
    }

    @Test func anIterationAwaitingCompletionStaysOutstandingUntilItsReceipt() {
        let r = recorder
        r.begin(7, intended: start, late: false)
        r.ended(7, .awaitingCompletion, at: start + .milliseconds(1))
        #expect(r.running() == 0 && r.hasOutstanding())
        r.receipt(7, at: start + .milliseconds(5))
        let s = r.state.withLock { $0 }
        #expect(!r.hasOutstanding() && s.succeeded == 1)
        #expect(s.overall.max >= 4_990 && s.overall.max <= 5_010)
    }

    @Test func aReceiptBeforeTheSendReturnsCompletesItOnce() {
        let r = recorder
        r.begin(1, intended: start, late: false)
        r.receipt(1, at: start + .milliseconds(2))
        #expect(r.running() == 1)
        r.ended(1, .awaitingCompletion, at: start + .milliseconds(3))
        let s = r.state.withLock { $0 }
        #expect(s.running == 0 && s.succeeded == 1 && s.outstanding.isEmpty)
    }

    @Test func duplicatesStrangersAndLossesAreTold() {
        let r = recorder
        for i in 0..<4 { r.begin(i, intended: start, late: false) }
        for i in 0..<4 { r.ended(i, i == 1 ? .failed("send:400:INVALID_ARGUMENT") : .awaitingCompletion, at: start) }
        r.receipt(0, at: start + .milliseconds(5))
        r.receipt(0, at: start + .milliseconds(6))
        r.receipt(99, at: start)
        r.receipt(nil, at: start)
        let s = r.state.withLock { $0 }
        #expect(s.succeeded == 1 && s.failed == 1 && s.duplicates == 1 && s.foreign == 2)
        // 2 and 3 were accepted and never arrived: a run that ends now counts them lost.
        #expect(Set(s.outstanding.keys) == [2, 3])
        let outcome = LoadOutcome(state: s, model: "open", window: 1, drain: 0)
        #expect(outcome.lost == 2)
        #expect(outcome.errors == ["send:400:INVALID_ARGUMENT": 1, "lost": 2, "duplicate": 1])
        #expect(outcome.totals.failed == 3 && outcome.totals.succeeded == 1 && abs(outcome.totals.errorRate - 0.75) < 1e-9)
    }

    @Test func aCompletionAfterTheWindowCountsButNotTowardThroughput() {
        let r = recorder
        r.begin(0, intended: start + .seconds(9), late: false)
        r.ended(0, .succeeded, at: start + .seconds(11))
        let s = r.state.withLock { $0 }
        #expect(s.succeeded == 1 && s.completedInWindow == 0)
        #expect(LoadOutcome(state: s, model: "closed", window: 10, drain: 1).totals.throughput == 0)
    }

    @Test func progressHandsOverTheIntervalAndStartsAFreshOne() {
        let r = recorder
        r.begin(0, intended: start, late: false)
        r.ended(0, .succeeded, at: start + .milliseconds(2))
        #expect(r.progress().interval.totalCount == 1)
        #expect(r.progress().interval.totalCount == 0)
        #expect(r.state.withLock { $0.overall.totalCount } == 1)
    }
}
