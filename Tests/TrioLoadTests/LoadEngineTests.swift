import Synchronization
import Testing
@testable import TrioLoad

/// The engine with plug-ins that do their work in memory: the pacing, the in-flight limit, the closed model, receipts
/// and losses, warm-up, and cancellation, through the real clock but no socket. Every assertion holds however late
/// the machine runs the tasks (the suite shares its process with slow ones).
@Suite struct LoadEngineTests {
    /// Records what the engine asked of it; each iteration waits `work`, then does what `outcome` says.
    final class Probe: LoadPlugin {
        let work: Duration
        let outcome: @Sendable (Int, LoadRecorder) -> IterationOutcome
        let seen = Mutex((running: 0, most: 0, indices: [Int]()))
        let started = Mutex(false)
        /// When each iteration began.
        let began = Mutex([Int: ContinuousClock.Instant]())

        init(work: Duration = .zero, outcome: @escaping @Sendable (Int, LoadRecorder) -> IterationOutcome = { _, _ in .succeeded }) {
            self.work = work
            self.outcome = outcome
        }

        func willStart(_ recorder: LoadRecorder) { started.withLock { $0 = true } }

        func iterate(_ index: Int, recorder: LoadRecorder) async -> IterationOutcome {
            let now = ContinuousClock.now
            began.withLock { $0[index] = now }
            seen.withLock { s in
                s.running += 1
                s.most = max(s.most, s.running)
                s.indices.append(index)
            }
            if work > .zero { try? await Task.sleep(for: work) }
            seen.withLock { $0.running -= 1 }
            return outcome(index, recorder)
        }
    }

    @Test func theOpenModelStartsEveryArrivalOfTheWindow() async {
        let probe = Probe()
        let outcome = await LoadEngine(model: .open(RateSchedule(constant: 200), maxInFlight: 1000), warmup: .zero,
                                       duration: .milliseconds(500)).run(probe) { _ in }
        #expect(probe.started.withLock { $0 })
        #expect(outcome.state.started == 100 && outcome.state.succeeded == 100 && outcome.state.dropped == 0)
        #expect(Set(probe.seen.withLock { $0.indices }) == Set(0..<100))
        let report = outcome.report(scenario: "probe", target: "memory", correct: nil, correctness: "")
        #expect(report.model == "open" && report.totals.seconds == 0.5)
        #expect(report.perSecond.map(\.succeeded).reduce(0, +) == 100)
        #expect(report.perSecond.compactMap(\.started).reduce(0, +) == 100)
        #expect(report.latencyMs.max > 0 && report.histogram?.hasPrefix("HISTF") == true)
    }

    @Test func aPacingTickStartsEveryArrivalNoneBeforeItsTicksEnd() async {
        // 200/s in 100 ms ticks: arrival i is due at i × 5 ms and goes out at the end of the tick it falls in, never
        // before (late is allowed: the machine may run the pacing late; without the tick arrival 1 would go at 5 ms).
        let probe = Probe()
        var engine = LoadEngine(model: .open(RateSchedule(constant: 200), maxInFlight: 1000), warmup: .zero, duration: .milliseconds(500))
        engine.pacingTick = .milliseconds(100)
        let before = ContinuousClock.now
        let outcome = await engine.run(probe) { _ in }
        #expect(outcome.state.started == 100 && outcome.state.succeeded == 100 && outcome.state.dropped == 0)
        let began = probe.began.withLock { $0 }
        #expect(began.count == 100)
        for (index, instant) in began {
            let tickEnd = Duration.milliseconds(Int64((Double(index) * 5 / 100).rounded(.up) * 100))
            #expect(instant - before >= tickEnd, "arrival \(index) began \(instant - before) after the run began, before its tick's end \(tickEnd)")
        }
        // The latency counts from the intended time, so the tick's wait is in it: arrival 1 waited about 95 ms.
        #expect(outcome.report(scenario: "probe", target: "memory", correct: nil, correctness: "").latencyMs.max >= 90)
    }

    @Test func startsBeyondTheInFlightLimitAreDroppedNotQueued() async {
        // Each iteration holds its place until every arrival of the run has been admitted or dropped, however late the
        // machine runs the pacing.
        let probe = Probe()
        let outcome = await LoadEngine(model: .open(RateSchedule(constant: 100), maxInFlight: 4), warmup: .zero,
                                       duration: .milliseconds(300)).run(Gated(probe: probe, arrivals: 30)) { _ in }
        #expect(outcome.state.started == 4)
        #expect(outcome.state.dropped == 26)
        #expect(probe.seen.withLock { $0.most } == 4)
        #expect(outcome.totals.succeeded == 4)
    }

    /// The probe's iteration, held until `arrivals` starts have been admitted or dropped.
    struct Gated: LoadPlugin {
        let probe: Probe
        let arrivals: Int

        func iterate(_ index: Int, recorder: LoadRecorder) async -> IterationOutcome {
            probe.seen.withLock { s in
                s.running += 1
                s.most = max(s.most, s.running)
            }
            while recorder.state.withLock({ $0.begun + $0.dropped }) < arrivals, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(5))
            }
            probe.seen.withLock { $0.running -= 1 }
            return .succeeded
        }
    }

    @Test func theClosedModelKeepsItsDevicesBusyAndNoMore() async {
        let probe = Probe(work: .milliseconds(5))
        let run = Task {
            await LoadEngine(model: .closed(concurrency: 3), warmup: .zero, duration: .seconds(600)).run(probe) { _ in }
        }
        // Until 30 iterations have run (however late the machine starts the devices), then the run is cancelled.
        let deadline = ContinuousClock.now + .seconds(60)
        while probe.seen.withLock({ $0.indices.count }) < 30, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        run.cancel()
        let outcome = await run.value
        #expect(probe.seen.withLock { $0.most } == 3)
        #expect(outcome.state.started >= 30 && outcome.state.started == outcome.state.succeeded + outcome.state.failed)
        let indices = probe.seen.withLock { $0.indices }
        #expect(Set(indices).count == indices.count && indices.max()! == indices.count - 1)
        #expect(outcome.model == "closed")
    }

    @Test func awaitedIterationsCompleteByReceiptAndTheRestAreLostAfterTheGrace() async {
        // Even iterations are received (before their send even returns); odd ones never are.
        let probe = Probe { index, recorder in
            if index % 2 == 0 { recorder.receipt(index, at: .now) }
            return .awaitingCompletion
        }
        let outcome = await LoadEngine(model: .open(RateSchedule(constant: 100), maxInFlight: 1000), warmup: .zero,
                                       duration: .milliseconds(200), grace: .milliseconds(100)).run(probe) { _ in }
        #expect(outcome.state.started == 20)
        #expect(outcome.state.succeeded == 10)
        #expect(outcome.lost == 10 && outcome.errors == ["lost": 10])
        #expect(outcome.totals.failed == 10 && outcome.totals.errorRate == 0.5)
        // The grace began after the last start (10 ms before the window's end).
        #expect(outcome.drain >= 0.05)
    }

    @Test func warmUpStartsRunButAreNotMeasured() async {
        let probe = Probe()
        let outcome = await LoadEngine(model: .open(RateSchedule(constant: 100), maxInFlight: 1000), warmup: .milliseconds(100),
                                       duration: .milliseconds(200)).run(probe) { _ in }
        #expect(probe.seen.withLock { $0.indices.count } == 30)
        #expect(outcome.state.begun == 30 && outcome.state.started == 20 && outcome.state.succeeded == 20)
    }

    @Test func cancellingARunEndsItWithAPartialReport() async {
        let probe = Probe(work: .milliseconds(1))
        let run = Task {
            await LoadEngine(model: .open(RateSchedule(constant: 100), maxInFlight: 1000), warmup: .zero, duration: .seconds(600)).run(probe) { _ in }
        }
        try? await Task.sleep(for: .milliseconds(300))
        run.cancel()
        let outcome = await run.value
        // The rest of the schedule did not go out in a burst, and the window is the part that ran.
        #expect(outcome.state.started < 60_000)
        #expect(outcome.window < 600 && outcome.window > 0)
        #expect(outcome.state.succeeded + outcome.state.failed == outcome.state.started)
    }

    @Test func progressLinesCarryTheTotalsAndWhatIsInFlight() async {
        let start = ContinuousClock.now
        let recorder = LoadRecorder(measuredFrom: start, windowEnd: start + .seconds(1))
        recorder.begin(0, intended: start, late: false)
        recorder.ended(0, .succeeded, at: start + .milliseconds(3))
        recorder.begin(1, intended: start, late: false)
        let lines = Mutex([String]())
        let reporter = Task { await LoadEngine.report(recorder, end: start, progress: { line in lines.withLock { $0.append(line) } }) }
        // A line a second; waited for as long as a loaded machine may need.
        let deadline = ContinuousClock.now + .seconds(30)
        while lines.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        reporter.cancel()
        await reporter.value
        let first = lines.withLock { $0.first } ?? ""
        #expect(first.hasPrefix("t=  1s (drain)  ok 1 (+1/s)  failed 0 (+0)  in-flight 1  this second p50 3.00 ms"))
    }
}
