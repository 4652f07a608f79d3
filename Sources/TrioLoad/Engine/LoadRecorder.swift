import Histogram
import Synchronization

/// What one run records, for every plug-in alike. Latency runs from each iteration's intended start (so a slow target
/// cannot hide its queue: coordinated omission is corrected) to its completion, failures included as wrk counts them;
/// rows are by the second an iteration completed in; an iteration is measured when it was due inside the window.
final class LoadRecorder: Sendable {
    /// An iteration begun and not yet complete.
    struct Outstanding: Sendable {
        var intended: ContinuousClock.Instant
        var measured: Bool
    }

    struct State {
        var outstanding: [Int: Outstanding] = [:]
        /// Iterations completed by a receipt, to tell a duplicate receipt from a stranger's.
        var received: Set<Int> = []
        var overall = HistogramCodec.make()
        /// Since the last progress line.
        var interval = HistogramCodec.make()
        var seconds: [Int: LoadReport.SecondBucket] = [:]
        var startedPerSecond: [Int: Int] = [:]
        var steps: [String: Histogram<UInt64>] = [:]
        var errors: [String: Int] = [:]
        /// Measured counts.
        var started = 0, succeeded = 0, failed = 0, dropped = 0, late = 0
        /// Successes that completed inside the window (what throughput counts).
        var completedInWindow = 0
        /// Receipts for an iteration already complete, and for one this run never began.
        var duplicates = 0, foreign = 0
        /// Iterations whose own task is still running (what the open model's in-flight limit counts).
        var running = 0
        /// Every iteration begun, warm-up included (the tool's CPU is divided by it).
        var begun = 0
        /// The closed model's next iteration number.
        var nextIndex = 0
    }

    let state = Mutex(State())
    let measuredFrom: ContinuousClock.Instant
    let windowEnd: ContinuousClock.Instant

    init(measuredFrom: ContinuousClock.Instant, windowEnd: ContinuousClock.Instant) {
        self.measuredFrom = measuredFrom
        self.windowEnd = windowEnd
    }

    /// Whole seconds since the window opened (negative in the warm-up).
    func second(_ instant: ContinuousClock.Instant) -> Int { Int((instant - measuredFrom).seconds.rounded(.down)) }

    /// Iteration `index`, due at `intended`, starts now; `late` when it starts more than `Arrivals.lateAfter` after that.
    func begin(_ index: Int, intended: ContinuousClock.Instant, late: Bool) {
        let measured = intended >= measuredFrom
        state.withLock { s in
            s.outstanding[index] = Outstanding(intended: intended, measured: measured)
            s.running += 1
            s.begun += 1
            guard measured else { return }
            s.started += 1
            s.startedPerSecond[second(intended), default: 0] += 1
            if late { s.late += 1 }
        }
    }

    /// The closed model's next iteration number.
    func nextIndex() -> Int {
        state.withLock { s in
            defer { s.nextIndex += 1 }
            return s.nextIndex
        }
    }

    /// A start due at `intended` was not made (the in-flight limit was reached).
    func drop(intended: ContinuousClock.Instant) {
        guard intended >= measuredFrom else { return }
        state.withLock { $0.dropped += 1 }
    }

    /// Iterations whose own task is still running.
    func running() -> Int { state.withLock { $0.running } }

    /// Whether any iteration begun has not completed.
    func hasOutstanding() -> Bool { state.withLock { !$0.outstanding.isEmpty } }

    /// The iteration's own task returned `outcome` at `now`.
    func ended(_ index: Int, _ outcome: IterationOutcome, at now: ContinuousClock.Instant) {
        state.withLock { s in
            s.running -= 1
            switch outcome {
            case .succeeded: complete(&s, index, at: now, error: nil)
            case .failed(let error): complete(&s, index, at: now, error: error)
            case .awaitingCompletion: break
            }
        }
    }

    /// Someone saw iteration `index` complete at `now` (a device received its push); nil for a receipt that names no
    /// iteration of this run.
    func receipt(_ index: Int?, at now: ContinuousClock.Instant) {
        state.withLock { s in
            guard let index, s.outstanding[index] != nil else {
                if let index, s.received.contains(index) { s.duplicates += 1 } else { s.foreign += 1 }
                return
            }
            s.received.insert(index)
            complete(&s, index, at: now, error: nil)
        }
    }

    /// One step of an iteration took `micros` (a registration's `register`, `relay_token`, `download`).
    func step(_ name: String, micros: UInt64) {
        state.withLock { s in
            _ = s.steps[name, default: HistogramCodec.make()].record(max(1, micros))
        }
    }

    private func complete(_ s: inout State, _ index: Int, at now: ContinuousClock.Instant, error: String?) {
        guard let entry = s.outstanding.removeValue(forKey: index), entry.measured else { return }
        let value = UInt64(max(1, (now - entry.intended).seconds * 1_000_000))
        let key = max(0, second(now))
        _ = s.overall.record(value)
        _ = s.interval.record(value)
        // Mutated in place: a copy of the bucket out of the dictionary and back would copy its histogram's counts
        // (tens of kilobytes) on every completion.
        _ = s.seconds[key, default: (HistogramCodec.make(), 0, 0)].histogram.record(value)
        if let error {
            s.failed += 1
            s.seconds[key]!.failed += 1
            s.errors[error, default: 0] += 1
        } else {
            s.succeeded += 1
            s.seconds[key]!.ok += 1
            if now <= windowEnd { s.completedInWindow += 1 }
        }
    }

    /// The progress numbers, and a fresh interval histogram.
    func progress() -> (ok: Int, failed: Int, outstanding: Int, interval: Histogram<UInt64>) {
        state.withLock { s in
            defer { s.interval = HistogramCodec.make() }
            return (s.succeeded, s.failed, s.outstanding.count, s.interval)
        }
    }
}
