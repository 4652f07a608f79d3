import Foundation

/// A usage error naming the flag at fault.
public struct LoadUsageError: Error, Sendable, CustomStringConvertible {
    /// The flag at fault, such as `--rate`.
    public var flag: String
    /// What is wrong with it.
    public var message: String
    /// `flag: message`.
    public var description: String { "\(flag): \(message)" }
    /// An error about `flag`.
    public init(flag: String, message: String) {
        self.flag = flag
        self.message = message
    }
}

/// Parses `10s`, `250ms`, `500us`, `2m`, `1h`, `1.5s`.
public func parseDuration(_ text: String, flag: String) throws -> Duration {
    // Longer suffixes first, so "ms" and "us" are not read as "s".
    let units: [(String, Double)] = [("ms", 1e-3), ("us", 1e-6), ("s", 1), ("m", 60), ("h", 3600)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
        guard let value = Double(text.dropLast(suffix.count)), value >= 0, value.isFinite else { break }
        return .nanoseconds(Int64((value * scale * 1e9).rounded()))
    }
    throw LoadUsageError(flag: flag, message: "'\(text)' is not a duration like 500us, 250ms, 10s or 2m")
}

/// Parses `--pacing-tick`: `0` (each start at its own time) or a duration up to 1 s, like `1ms` or `500us`.
public func parsePacingTick(_ text: String) throws -> Duration {
    if text == "0" { return .zero }
    let tick = try parseDuration(text, flag: "--pacing-tick")
    guard tick <= .seconds(1) else { throw LoadUsageError(flag: "--pacing-tick", message: "must be at most 1s (a tick's sends are each up to a tick late)") }
    return tick
}

/// Arrival rate over time: constant, or linear ramps between points (`0:100/s,30s:2000/s`), constant after the last.
public struct RateSchedule: Sendable, Equatable {
    /// (seconds since start, starts per second), sorted by time.
    public var points: [(seconds: Double, rate: Double)]

    /// Schedules are equal when their points are.
    public static func == (a: RateSchedule, b: RateSchedule) -> Bool {
        a.points.map(\.seconds) == b.points.map(\.seconds) && a.points.map(\.rate) == b.points.map(\.rate)
    }

    /// The same rate throughout.
    public init(constant rate: Double) { points = [(0, rate)] }

    /// Parses `T:R/s,T:R/s,...` where T is a duration (`0`, `30s`) and R a rate.
    public init(parsing text: String, flag: String = "--ramp") throws {
        var parsed: [(Double, Double)] = []
        for part in text.split(separator: ",") {
            let kv = part.split(separator: ":", maxSplits: 1)
            guard kv.count == 2 else { throw LoadUsageError(flag: flag, message: "'\(part)' is not TIME:RATE/s") }
            let time = kv[0] == "0" ? Duration.zero : try parseDuration(String(kv[0]), flag: flag)
            var rateText = String(kv[1])
            if rateText.hasSuffix("/s") { rateText.removeLast(2) }
            guard let rate = Double(rateText), rate >= 0, rate.isFinite else {
                throw LoadUsageError(flag: flag, message: "'\(kv[1])' is not a rate like 100/s")
            }
            parsed.append((time.seconds, rate))
        }
        guard !parsed.isEmpty else { throw LoadUsageError(flag: flag, message: "empty ramp") }
        guard zip(parsed, parsed.dropFirst()).allSatisfy({ $0.0 < $1.0 }) else {
            throw LoadUsageError(flag: flag, message: "ramp times must increase")
        }
        points = parsed.map { (seconds: $0.0, rate: $0.1) }
    }

    /// Starts per second at `t` seconds.
    public func rate(at t: Double) -> Double {
        guard let first = points.first else { return 0 }
        if t <= first.seconds { return first.rate }
        for (a, b) in zip(points, points.dropFirst()) where t < b.seconds {
            return a.rate + (b.rate - a.rate) * (t - a.seconds) / (b.seconds - a.seconds)
        }
        return points.last!.rate
    }
}

/// A pass/fail rule on the final report: `p99<25ms`, `p50<=5ms`, `errors<0.1%`, `rate>1000/s`.
public struct Threshold: Sendable, Equatable, CustomStringConvertible {
    /// What a threshold measures.
    public enum Metric: Sendable, Equatable {
        case percentile(Double)
        case max
        case errorRate
        case throughput
    }
    /// What the threshold measures.
    public var metric: Metric
    /// A step's latency (`register.p99<50ms`) instead of the whole iteration's.
    public var step: String?
    /// True for `<` and `<=`.
    public var lessThan: Bool
    /// True for `<=` and `>=`.
    public var orEqual: Bool
    /// Milliseconds for latency, a fraction for errors, per second for throughput.
    public var limit: Double
    /// The threshold as given.
    public var text: String
    /// The threshold as given.
    public var description: String { text }

    /// Parses `METRIC OP VALUE`, such as `p99<25ms`, `register.p99<50ms`, `errors<0.1%` or `rate>1000/s`.
    public init(parsing text: String) throws {
        self.text = text
        let ops = ["<=", ">=", "<", ">"]
        guard let op = ops.first(where: { text.contains($0) }), let range = text.range(of: op) else {
            throw LoadUsageError(flag: "--threshold", message: "'\(text)' needs <, <=, > or >=: " + Self.metrics)
        }
        var name = String(text[..<range.lowerBound]).trimmingCharacters(in: .whitespaces)
        if let dot = name.firstIndex(of: "."), name[name.index(after: dot)...].hasPrefix("p") || name[name.index(after: dot)...] == "max" {
            step = String(name[..<dot])
            name = String(name[name.index(after: dot)...])
            guard name != "errors", name != "rate" else {
                throw LoadUsageError(flag: "--threshold", message: "a step takes latency rules only (\(step!).p99<50ms)")
            }
        }
        var value = String(text[range.upperBound...]).trimmingCharacters(in: .whitespaces)
        lessThan = op.hasPrefix("<")
        orEqual = op.hasSuffix("=")
        switch name {
        case "errors":
            guard value.hasSuffix("%"), let v = Double(value.dropLast()) else {
                throw LoadUsageError(flag: "--threshold", message: "errors takes a percentage, e.g. errors<0.1%")
            }
            metric = .errorRate
            limit = v / 100
        case "rate":
            if value.hasSuffix("/s") { value.removeLast(2) }
            guard let v = Double(value) else { throw LoadUsageError(flag: "--threshold", message: "rate takes N/s") }
            metric = .throughput
            limit = v
        default:
            if name == "max" {
                metric = .max
            } else if name.hasPrefix("p"), let p = Double(name.dropFirst()), p > 0, p <= 100 {
                metric = .percentile(p)
            } else {
                throw LoadUsageError(flag: "--threshold", message: "unknown metric '\(name)': " + Self.metrics)
            }
            limit = try parseDuration(value, flag: "--threshold").seconds * 1000
        }
    }

    /// Every metric a rule takes, for the error messages.
    static let metrics = "the metrics are pN (any percentile: p50, p90, p99, p99.9) and max, as a duration (p99<50ms); errors, "
        + "as a percentage (errors<0.1%); rate, per second (rate>1000/s); and STEP.pN or STEP.max for one step's latency "
        + "(register.p99<50ms; steps: relay_token, register, download)"

    /// Whether a report passes.
    public func passes(_ report: LoadReport) -> Bool {
        let actual: Double
        let latency: LoadReport.Latency
        if let step {
            // A step the run did not make fails the rule (it cannot be shown to hold).
            guard let measured = report.steps?[step]?.latencyMs else { return false }
            latency = measured
        } else {
            latency = report.latencyMs
        }
        switch metric {
        case .percentile(let p): actual = latency.percentile(p)
        case .max: actual = latency.max
        case .errorRate: actual = report.totals.errorRate
        case .throughput: actual = report.totals.throughput
        }
        if lessThan { return orEqual ? actual <= limit : actual < limit }
        return orEqual ? actual >= limit : actual > limit
    }
}

