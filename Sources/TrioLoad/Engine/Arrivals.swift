/// The open model's pacing (wrk2, k6's arrival-rate executors): when each start is due, from a rate schedule, whatever
/// the target does. A value type the engine asks for the next start; it never sleeps or reads a clock.
struct Arrivals: Sendable, Equatable {
    /// One start: its number (every arrival counts, admitted or dropped) and when it is due, in seconds since the run began.
    struct Arrival: Sendable, Equatable {
        var index: Int
        var offset: Double
    }

    /// Time is walked in steps of this many seconds where the rate is below one start per step (a ramp's foot, a
    /// stretch of zero rate).
    static let step = 0.01
    /// A start issued more than this after it was due counts as late.
    static let lateAfter: Duration = .milliseconds(10)

    let schedule: RateSchedule
    /// Seconds of warm-up and window together: no start is due at or after it (or within a nanosecond of it, so that
    /// the sums of steps like 0.01 do not add or lose a start by rounding).
    let total: Double
    /// `total`, less a nanosecond.
    private var end: Double { total - 1e-9 }
    private(set) var offset = 0.0
    private(set) var index = 0
    /// Starts still owed before the next is due: 1 after a start, 0 before the first (which goes out at the first
    /// moment the rate is positive).
    private var owed = 0.0

    init(schedule: RateSchedule, total: Double) {
        self.schedule = schedule
        self.total = total
    }

    /// The next start, or nil when the run's time is over. The next start is due where the rate, integrated since the
    /// last one, reaches one start: at a steady rate R that is 1/R later, and a ramp from zero starts slowly instead of
    /// waiting 1/R at its first tiny rate (which left a `0:0/s,60s:1000/s` ramp idle for its first seconds).
    mutating func next() -> Arrival? {
        while offset < end {
            let rate = schedule.rate(at: offset)
            guard rate > 0 else {
                offset += Self.step
                continue
            }
            guard owed <= rate * Self.step else {
                owed -= rate * Self.step
                offset += Self.step
                continue
            }
            offset += owed / rate
            guard offset < end else { return nil }
            owed = 1
            defer { index += 1 }
            return Arrival(index: index, offset: offset)
        }
        return nil
    }

    /// When the engine wakes for a start due at `offset` seconds with a pacing tick of `tick` seconds: at its own time
    /// when `tick` is 0, else at the first multiple of `tick` at or after it, so that every start due within one tick
    /// goes out at that tick's end (each at most `tick` late, counted in its latency: latency runs from when it was due).
    /// One wake-up a tick instead of one a start: at 2,000 starts a second a 1 ms tick took NIO's floor under the push
    /// driver from 2.8 to 1.2 context switches per delivery (`relay-floor.py --driver nio --tick-us 1000`).
    static func wake(for offset: Double, tick: Double) -> Double {
        guard tick > 0 else { return offset }
        // A nanosecond's slack, so that a start due exactly on a tick is not put off to the next: offsets are sums of
        // 1/rate steps, and ten 0.5 ms steps over a 1 ms tick read 5.000000000000001 ticks.
        return (offset / tick - 1e-9).rounded(.up) * tick
    }

    /// Whether a start due now goes out: not when `maxInFlight` iterations are already running (it is dropped and
    /// counted, not queued, so the offered load stays the schedule's).
    static func admits(running: Int, maxInFlight: Int) -> Bool { running < maxInFlight }
}
