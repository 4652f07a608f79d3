import Foundation
import NIOCore
import ServerSupport

/// The one load engine under `survey-cli load register` and `load push`: paces starts (open model) or runs virtual
/// devices back to back (closed model), caps what is in flight, records every iteration in one `LoadRecorder`, prints
/// a progress line a second, waits out a grace for completions reported elsewhere, and on cancellation ends with what
/// it has. What an iteration does is the plug-in's.
struct LoadEngine: Sendable {
    var model: LoadModel
    var warmup: Duration
    var duration: Duration
    /// After the last start, how long iterations awaiting completion may still complete before they count as lost.
    var grace: Duration = .zero
    /// Event loops to run on (the loop HTTP client's): the pacing on the first, iterations spread over all, so that an
    /// iteration's requests and answers stay on its loop's thread. Empty: Swift's global executor and its timers.
    var loops: [EventLoopTaskExecutor] = []
    /// Open model: starts due within one tick go out together at its end (``Arrivals/wake(for:tick:)``); zero wakes for
    /// each start at its own time.
    var pacingTick: Duration = .zero

    /// Runs `plugin` under the model; `progress` gets a line a second, through the drain too.
    func run(_ plugin: some LoadPlugin, progress: @escaping @Sendable (String) -> Void) async -> LoadOutcome {
        guard let first = loops.first else { return await runHere(plugin, progress: progress) }
        return await withTaskExecutorPreference(first) { await runHere(plugin, progress: progress) }
    }

    /// The executor iteration (or closed-model device) `index` runs on.
    private func executor(_ index: Int) -> (any TaskExecutor)? { loops.isEmpty ? nil : loops[index % loops.count] }

    /// Waits until `instant`: on the first loop's timer when there are loops (a pacing wake-up stays on that thread),
    /// else with `Task.sleep`. Returns early when the task is cancelled.
    private func sleep(until instant: ContinuousClock.Instant) async {
        guard let loop = loops.first?.eventLoop else {
            try? await Task.sleep(until: instant, clock: .continuous)
            return
        }
        let delay = instant - .now
        guard delay > .zero else { return }
        let (seconds, attoseconds) = delay.components
        let scheduled = loop.scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)) {}
        await withTaskCancellationHandler {
            _ = try? await scheduled.futureResult.get()
        } onCancel: {
            scheduled.cancel()
        }
    }

    private func runHere(_ plugin: some LoadPlugin, progress: @escaping @Sendable (String) -> Void) async -> LoadOutcome {
        let start = ContinuousClock.now
        let measuredFrom = start + warmup
        let end = measuredFrom + duration
        let recorder = LoadRecorder(measuredFrom: measuredFrom, windowEnd: end)
        plugin.willStart(recorder)
        let reporter = Task { await Self.report(recorder, end: end, progress: progress) }
        defer { reporter.cancel() }

        switch model {
        case .open(let schedule, let maxInFlight):
            var arrivals = Arrivals(schedule: schedule, total: (warmup + duration).seconds)
            let tick = pacingTick.seconds
            await withDiscardingTaskGroup { group in
                while let arrival = arrivals.next() {
                    let intended = start + .nanoseconds(Int64((arrival.offset * 1e9).rounded()))
                    let wake = start + .nanoseconds(Int64((Arrivals.wake(for: arrival.offset, tick: tick) * 1e9).rounded()))
                    // Suspends on the first loop's timer (or `Task.sleep`): no thread waits.
                    await sleep(until: wake)
                    // Cancelled: the run ends here with what it has (the cancelled sleep returns at once; the rest of
                    // the schedule must not go out in a burst).
                    if Task.isCancelled { break }
                    guard Arrivals.admits(running: recorder.running(), maxInFlight: maxInFlight) else {
                        recorder.drop(intended: intended)
                        continue
                    }
                    recorder.begin(arrival.index, intended: intended, late: ContinuousClock.now - intended > Arrivals.lateAfter)
                    group.addTask(executorPreference: executor(arrival.index)) {
                        let outcome = await plugin.iterate(arrival.index, recorder: recorder)
                        recorder.ended(arrival.index, outcome, at: .now)
                    }
                }
            }
        case .closed(let concurrency):
            await withDiscardingTaskGroup { group in
                for device in 0..<concurrency {
                    group.addTask(executorPreference: executor(device)) {
                        while ContinuousClock.now < end, !Task.isCancelled {
                            let index = recorder.nextIndex()
                            recorder.begin(index, intended: .now, late: false)
                            let outcome = await plugin.iterate(index, recorder: recorder)
                            recorder.ended(index, outcome, at: .now)
                        }
                    }
                }
            }
        }
        let graceEnd = ContinuousClock.now + grace
        while ContinuousClock.now < graceEnd, !Task.isCancelled, recorder.hasOutstanding() {
            try? await Task.sleep(for: .milliseconds(50))
        }
        let finished = ContinuousClock.now
        // A cancelled run's window is the part of it that ran (its report is partial, not diluted by time never run).
        let window = Task.isCancelled ? max(0.001, min(duration.seconds, (finished - measuredFrom).seconds)) : max(0.001, duration.seconds)
        return LoadOutcome(state: recorder.state.withLock { $0 }, model: model.name, window: window,
                           drain: max(0, (finished - end).seconds))
    }

    /// One line a second: totals, this second's completions and their p50/p99, and what is outstanding.
    static func report(_ recorder: LoadRecorder, end: ContinuousClock.Instant, progress: @Sendable (String) -> Void) async {
        var last = (ok: 0, failed: 0)
        var elapsed = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            if Task.isCancelled { break }
            elapsed += 1
            let p = recorder.progress()
            let phase = ContinuousClock.now > end ? " (drain)" : ""
            progress(String(format: "t=%3ds%@  ok %d (+%d/s)  failed %d (+%d)  in-flight %d  this second p50 %.2f ms  p99 %.2f ms",
                            elapsed, phase, p.ok, p.ok - last.ok, p.failed, p.failed - last.failed, p.outstanding,
                            LoadReport.ms(p.interval.valueAtPercentile(50)), LoadReport.ms(p.interval.valueAtPercentile(99))))
            last = (p.ok, p.failed)
        }
    }
}

/// How a load run's iterations are started.
public enum LoadModel: Sendable {
    /// Starts due on a schedule whatever the target does (latency counted from the intended start); a start due while
    /// `maxInFlight` iterations run is dropped and counted.
    case open(RateSchedule, maxInFlight: Int)
    /// A fixed number of virtual devices, each starting its next iteration when its last ended.
    case closed(concurrency: Int)

    /// `open` or `closed`, as the report names it.
    var name: String {
        switch self {
        case .open: "open"
        case .closed: "closed"
        }
    }
}

/// What a run recorded, and the report's shared parts built from it.
struct LoadOutcome {
    var state: LoadRecorder.State
    var model: String
    /// Seconds of the measured window (the part that ran, when cancelled).
    var window: Double
    /// Seconds from the window's end to the last completion (or the grace's end).
    var drain: Double

    /// Measured iterations still awaiting completion when the grace ended: lost.
    var lost: Int { state.outstanding.values.filter(\.measured).count }

    /// Errors by key, with the lost and the duplicates.
    var errors: [String: Int] {
        var errors = state.errors
        if lost > 0 { errors["lost", default: 0] += lost }
        if state.duplicates > 0 { errors["duplicate", default: 0] += state.duplicates }
        return errors
    }

    var totals: LoadReport.Totals {
        let failed = state.failed + lost
        let finished = state.succeeded + failed
        return .init(started: state.started, succeeded: state.succeeded, failed: failed, dropped: state.dropped, late: state.late,
                     seconds: window, throughput: Double(state.completedInWindow) / window,
                     errorRate: finished == 0 ? 0 : Double(failed) / Double(finished), offeredRate: Double(state.started) / window,
                     completedInWindow: state.completedInWindow, drainSeconds: drain)
    }

    /// The report without its run information: latency, rows, steps and errors from the recorder.
    func report(scenario: String, target: String, correct: Bool?, correctness: String) -> LoadReport {
        var report = LoadReport(scenario: scenario, model: model, target: target, totals: totals, latencyMs: LoadReport.latency(state.overall),
                                errors: errors, perSecond: LoadReport.rows(state.seconds, started: state.startedPerSecond),
                                correct: correct, correctness: correctness, thresholds: [:])
        report.histogram = HistogramCodec.encode(state.overall)
        report.steps = state.steps.isEmpty ? nil : state.steps.mapValues(LoadReport.step)
        return report
    }
}
