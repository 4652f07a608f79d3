import SurveyWire

/// One scope's standing faults (global, or one device) and its generator.
struct FaultState: Sendable {
    var spec: RelayWire.Faults
    var random: SeededRandom
    /// Relay-clock ms until which the provider APIs answer the outage status.
    var outageUntil: Int64?
    /// Provider requests still to fail by `fail_next`.
    var failNextLeft: Int

    /// The status the next provider request fails with by count, if any (counting it).
    mutating func takeFailNext() -> Int? {
        guard failNextLeft > 0, let status = spec.failNext?.status else { return nil }
        failNextLeft -= 1
        return status
    }

    init(spec: RelayWire.Faults, now: Int64) {
        self.spec = spec
        random = SeededRandom(seed: spec.seed ?? 0)
        outageUntil = spec.outage.map { now + Int64($0.seconds * 1000) }
        failNextLeft = spec.failNext?.count ?? 0
    }

    /// Checks a PUT body; returns the message of the first problem.
    static func validate(_ spec: RelayWire.Faults) -> (field: String, message: String)? {
        for (field, rate) in [("drop_rate", spec.dropRate), ("duplicate_rate", spec.duplicateRate)] {
            if let rate, !(0...1).contains(rate) { return (field, "\(field) must be between 0 and 1") }
        }
        if let delay = spec.delayMs, delay.min < 0 || delay.max < delay.min || delay.max > 60_000 {
            return ("delay_ms", "delay_ms needs 0 <= min <= max <= 60000")
        }
        if let window = spec.reorderWindow, !(0...1000).contains(window) {
            return ("reorder_window", "reorder_window must be 0-1000")
        }
        if let outage = spec.outage {
            if let status = outage.status, !(400...599).contains(status) { return ("outage", "outage.status must be 400-599") }
            if !(outage.seconds > 0 && outage.seconds <= 86_400) { return ("outage", "outage.seconds must be in (0, 86400]") }
        }
        if let failNext = spec.failNext {
            if !(1...100_000).contains(failNext.count) { return ("fail_next", "fail_next.count must be 1-100000") }
            if !(400...599).contains(failNext.status) { return ("fail_next", "fail_next.status must be 400-599") }
        }
        return nil
    }
}
