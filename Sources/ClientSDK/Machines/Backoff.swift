/// Exponential backoff with "equal jitter": each wait is drawn from the upper half of `base · 2^(failures−1)`, capped.
/// Devices that failed together do not come back together, and a wait never shrinks to nothing. A value type: the
/// caller keeps it, asks for the next wait after each failure and resets it after a success.
struct Backoff: Sendable, Equatable {
    let base: Duration
    let cap: Duration
    private(set) var failures = 0

    init(base: Duration, cap: Duration) {
        self.base = base
        self.cap = cap
    }

    /// Push streams: 0.1 s doubling to 5 s.
    static let stream = Backoff(base: .milliseconds(100), cap: .seconds(5))
    /// Outboxes (uploads, pings) and token renewal: 0.5 s doubling to 60 s.
    static let outbox = Backoff(base: .milliseconds(500), cap: .seconds(60))
    /// A survey fetch that failed for a reason that may pass (5xx, transport): 1 s doubling to 60 s.
    static let fetch = Backoff(base: .seconds(1), cap: .seconds(60))

    /// The ceiling of the next wait (without jitter).
    var ceiling: Duration {
        guard failures > 0 else { return .zero }
        let exponent = min(failures - 1, 20)
        let scaled = base * (1 << exponent)
        return min(scaled, cap)
    }

    /// Records a failure and returns how long to wait before the next attempt.
    mutating func failed(using random: inout some RandomNumberGenerator) -> Duration {
        failures += 1
        let ceiling = self.ceiling
        let nanos = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        guard nanos > 1 else { return ceiling }
        return .nanoseconds(Int64.random(in: (nanos / 2)...nanos, using: &random))
    }

    /// Records a failure with the system's randomness.
    mutating func failed() -> Duration {
        var random = SystemRandomNumberGenerator()
        return failed(using: &random)
    }

    /// After a success: the next failure starts from `base` again.
    mutating func reset() { failures = 0 }
}
