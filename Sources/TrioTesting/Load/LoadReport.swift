import Foundation
import Histogram

/// The outcome of a load run; written by `--report` as JSON (`schema` names its version).
public struct LoadReport: Codable, Sendable {
    public static let schemaVersion = "survey-trio.load-report/1"

    public struct Latency: Codable, Sendable {
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double
        public var max: Double
        public var mean: Double
        enum CodingKeys: String, CodingKey { case p50, p90, p99, p999 = "p99_9", max, mean }

        func percentile(_ p: Double) -> Double {
            switch p {
            case 50: p50
            case 90: p90
            case 99: p99
            case 99.9: p999
            default: p >= 99.9 ? p999 : p >= 99 ? p99 : p >= 90 ? p90 : p50
            }
        }
    }

    public struct Totals: Codable, Sendable {
        /// Iterations started after warm-up.
        public var started: Int
        public var succeeded: Int
        public var failed: Int
        /// Open model: starts skipped because `--max-in-flight` was reached.
        public var dropped: Int
        /// Open model: starts issued more than 10 ms after their intended time.
        public var late: Int
        public var seconds: Double
        /// Successful iterations per second over the measured span.
        public var throughput: Double
        public var errorRate: Double
        enum CodingKeys: String, CodingKey {
            case started, succeeded, failed, dropped, late, seconds, throughput, errorRate = "error_rate"
        }
    }

    public struct Second: Codable, Sendable {
        public var second: Int
        public var succeeded: Int
        public var failed: Int
        public var p50: Double
        public var p99: Double
    }

    public var schema = LoadReport.schemaVersion
    public var scenario: String
    public var model: String
    public var target: String
    public var totals: Totals
    /// Latency in milliseconds, from each iteration's intended start (corrected for coordinated omission).
    public var latencyMs: Latency
    /// Failures by `status:code` (or transport error code).
    public var errors: [String: Int]
    public var perSecond: [Second]
    /// The server's registered-participant count matched the tool's distinct successes (nil when not checked).
    public var correct: Bool?
    public var correctness: String?
    public var thresholds: [String: Bool]

    enum CodingKeys: String, CodingKey {
        case schema, scenario, model, target, totals, latencyMs = "latency_ms", errors, perSecond = "per_second", correct
        case correctness, thresholds
    }

    /// The final human-readable table.
    public func table() -> String {
        var lines: [String] = []
        func f(_ v: Double) -> String { String(format: "%.2f", v) }
        lines.append("scenario \(scenario) (\(model)) against \(target)")
        lines.append("  started \(totals.started)  ok \(totals.succeeded)  failed \(totals.failed)  dropped \(totals.dropped)  late \(totals.late)")
        lines.append("  throughput \(f(totals.throughput))/s over \(f(totals.seconds)) s, errors \(f(totals.errorRate * 100))%")
        lines.append("  latency ms  p50 \(f(latencyMs.p50))  p90 \(f(latencyMs.p90))  p99 \(f(latencyMs.p99))  p99.9 \(f(latencyMs.p999))  max \(f(latencyMs.max))")
        for (key, count) in errors.sorted(by: { $0.key < $1.key }) { lines.append("  error \(key): \(count)") }
        if let correctness { lines.append("  correctness: \(correctness)") }
        for (rule, ok) in thresholds.sorted(by: { $0.key < $1.key }) { lines.append("  threshold \(rule): \(ok ? "pass" : "FAIL")") }
        return lines.joined(separator: "\n")
    }
}

extension LoadReport {
    /// One second's latencies and outcomes, as both load drivers collect them.
    typealias SecondBucket = (histogram: Histogram<UInt64>, ok: Int, failed: Int)

    /// Percentiles (ms) of a histogram of microseconds.
    static func latency(_ h: Histogram<UInt64>) -> Latency {
        Latency(p50: ms(h.valueAtPercentile(50)), p90: ms(h.valueAtPercentile(90)), p99: ms(h.valueAtPercentile(99)),
                p999: ms(h.valueAtPercentile(99.9)), max: ms(h.max), mean: h.mean / 1000)
    }

    /// The per-second rows, in order.
    static func rows(_ seconds: [Int: SecondBucket]) -> [Second] {
        seconds.keys.sorted().map { key in
            let b = seconds[key]!
            return Second(second: key, succeeded: b.ok, failed: b.failed, p50: ms(b.histogram.valueAtPercentile(50)),
                          p99: ms(b.histogram.valueAtPercentile(99)))
        }
    }

    static func ms(_ micros: UInt64) -> Double { Double(micros) / 1000 }
}
