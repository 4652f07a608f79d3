import Foundation
import Histogram
import SurveyWire

/// The outcome of a load run; written by `--report` as JSON (`schema` names its version). Everything needed to rerun the
/// run (`run.options`) and to combine it with other runs (`histogram` fields, HdrHistogram's compressed encoding) is in it.
public struct LoadReport: Codable, Sendable {
    /// The `schema` value this version writes.
    public static let schemaVersion = "survey-trio.load-report/2"

    /// Latency percentiles, in milliseconds.
    public struct Latency: Codable, Sendable, Equatable {
        /// Median, in milliseconds.
        public var p50: Double
        /// 90th percentile.
        public var p90: Double
        /// 99th percentile.
        public var p99: Double
        /// 99.9th percentile (`p99_9`).
        public var p999: Double
        /// The slowest.
        public var max: Double
        /// The mean.
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

    /// Counts and rates over the measured window.
    public struct Totals: Codable, Sendable {
        /// Iterations started after warm-up.
        public var started: Int
        /// Iterations that succeeded.
        public var succeeded: Int
        /// Iterations that failed (by the check, a status, or a transport error).
        public var failed: Int
        /// Open model: starts skipped because `--max-in-flight` was reached.
        public var dropped: Int
        /// Open model: starts issued more than 10 ms after their intended time.
        public var late: Int
        /// The measured window (the duration; for a push run, until the last send).
        public var seconds: Double
        /// Iterations that completed successfully inside the measured window, per second of it (a run's drain after
        /// the window does not dilute it).
        public var throughput: Double
        /// Failed iterations (and, for pushes, lost deliveries) over those finished, 0 to 1.
        public var errorRate: Double
        /// Iterations started per second of the window (open model: the offered rate actually issued).
        public var offeredRate: Double?
        /// Successful completions inside the window (what `throughput` counts).
        public var completedInWindow: Int?
        /// Seconds the last iterations took to finish after the window closed.
        public var drainSeconds: Double?
        enum CodingKeys: String, CodingKey {
            case started, succeeded, failed, dropped, late, seconds, throughput, errorRate = "error_rate", offeredRate = "offered_rate"
            case completedInWindow = "completed_in_window", drainSeconds = "drain_seconds"
        }
    }

    /// One second of the run, by completion time (seconds since the window opened; the drain's seconds come after it).
    public struct Second: Codable, Sendable {
        /// Seconds since the measured window opened.
        public var second: Int
        /// Iterations started in this second (the offered load).
        public var started: Int?
        /// Iterations that succeeded.
        public var succeeded: Int
        /// Iterations that failed (by the check, a status, or a transport error).
        public var failed: Int
        /// Latency of the iterations that completed in this second.
        public var p50: Double
        /// 99th percentile.
        public var p99: Double
        /// Those latencies (µs), HdrHistogram's compressed encoding.
        public var histogram: String?
    }

    /// One step of an iteration (relay token, registration, survey download).
    public struct Step: Codable, Sendable {
        /// Times the step ran.
        public var count: UInt64
        /// The step's latency.
        public var latencyMs: Latency
        /// The step's latencies (µs), HdrHistogram's compressed encoding.
        public var histogram: String
        enum CodingKeys: String, CodingKey { case count, latencyMs = "latency_ms", histogram }
    }

    /// How the run was made: enough to run it again and to tell runs apart.
    public struct RunInfo: Codable, Sendable {
        /// `survey-cli`.
        public var tool: String
        /// The tool's version.
        public var version: String
        /// When the measured window opened (RFC 3339, ms) and the same in Unix ms (`load merge` aligns rows by it).
        public var measuredFrom: String
        /// `measured_from` in Unix milliseconds.
        public var measuredFromMs: Int64
        /// The machine's host name.
        public var host: String
        /// Cores the machine has.
        public var cores: Int
        /// Every option of the command, as given or defaulted.
        public var options: [String: String]
        /// Participants the run drew credentials from, when it registered.
        public var participants: Int?
        /// The per-request timeout, in seconds.
        public var timeoutSeconds: Double?
        /// The tool's own CPU (user + system) over the run, and per iteration.
        public var toolCPUSeconds: Double
        /// `tool_cpu_seconds` per completed iteration, in milliseconds.
        public var toolCPUMsPerIteration: Double?
        /// `load merge`: the reports combined into this one.
        public var mergedFrom: Int?
        enum CodingKeys: String, CodingKey {
            case tool, version, measuredFrom = "measured_from", measuredFromMs = "measured_from_ms", host, cores, options, participants
            case timeoutSeconds = "timeout_seconds", toolCPUSeconds = "tool_cpu_seconds", toolCPUMsPerIteration = "tool_cpu_ms_per_iteration"
            case mergedFrom = "merged_from"
        }
    }

    /// The report format's name and version.
    public var schema = LoadReport.schemaVersion
    /// What was run: `health`, `register` (with `+relay_token`, `+download_surveys`), or `push(PLATFORM, N devices)`.
    public var scenario: String
    /// `closed` (a fixed number of virtual devices) or `open` (arrivals on a schedule).
    public var model: String
    /// The URL (or URLs) the load went to.
    public var target: String
    /// How the run was made.
    public var run: RunInfo?
    /// Counts and rates over the measured window.
    public var totals: Totals
    /// Latency in milliseconds, from each iteration's intended start (corrected for coordinated omission).
    public var latencyMs: Latency
    /// The same latencies (µs), HdrHistogram's compressed encoding (`HISTF…`).
    public var histogram: String?
    /// Latency of each step of an iteration, by step name.
    public var steps: [String: Step]?
    /// Failures by `status:code` (or transport error code).
    public var errors: [String: Int]
    /// The first answer body seen for each kind of error (at most ``maxErrorSamples`` kinds, each clipped to
    /// ``errorSampleLength`` characters): what a `register_user:not_json` or a `502` actually said.
    public var errorSamples: [String: String]?
    /// Kinds of error with a sample kept.
    public static let maxErrorSamples = 10
    /// Characters kept of a sample.
    public static let errorSampleLength = 300
    /// The run second by second.
    public var perSecond: [Second]
    /// The correctness pass: nil when not made (see `correctness` for why).
    public var correct: Bool?
    /// What the correctness pass found, or why it was not made.
    public var correctness: String?
    /// Each `--threshold` given and whether it held.
    public var thresholds: [String: Bool]

    enum CodingKeys: String, CodingKey {
        case schema, scenario, model, target, run, totals, latencyMs = "latency_ms", histogram, steps, errors, perSecond = "per_second"
        case correct, correctness, thresholds, errorSamples = "error_samples"
    }

    /// The final human-readable table.
    public func table() -> String {
        var lines: [String] = []
        func f(_ v: Double) -> String { String(format: "%.2f", v) }
        lines.append("scenario \(scenario) (\(model)) against \(target)")
        lines.append("  started \(totals.started)  ok \(totals.succeeded)  failed \(totals.failed)  dropped \(totals.dropped)  late \(totals.late)")
        var rate = "  throughput \(f(totals.throughput))/s over \(f(totals.seconds)) s"
        if let offered = totals.offeredRate { rate += " (offered \(f(offered))/s)" }
        if let drain = totals.drainSeconds, drain > 0.05 { rate += ", drain \(f(drain)) s" }
        lines.append(rate + ", errors \(f(totals.errorRate * 100))%")
        lines.append("  latency ms  p50 \(f(latencyMs.p50))  p90 \(f(latencyMs.p90))  p99 \(f(latencyMs.p99))  p99.9 \(f(latencyMs.p999))  max \(f(latencyMs.max))")
        for (name, step) in (steps ?? [:]).sorted(by: { $0.key < $1.key }) {
            lines.append("  step \(name) ms  p50 \(f(step.latencyMs.p50))  p99 \(f(step.latencyMs.p99))  max \(f(step.latencyMs.max))  (\(step.count))")
        }
        for (key, count) in errors.sorted(by: { $0.key < $1.key }) {
            lines.append("  error \(key): \(count)")
            if let sample = errorSamples?[key] {
                lines.append("    e.g. \(sample.replacingOccurrences(of: "\n", with: " ").prefix(120))")
            }
        }
        if let cpu = run?.toolCPUMsPerIteration { lines.append("  tool CPU \(String(format: "%.3f", cpu)) ms per iteration") }
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
                p999: ms(h.valueAtPercentile(99.9)), max: ms(h.max), mean: h.totalCount == 0 ? 0 : h.mean / 1000)
    }

    /// The per-second rows, in order (`started`: iterations started in each second, when known).
    static func rows(_ seconds: [Int: SecondBucket], started: [Int: Int] = [:]) -> [Second] {
        Set(seconds.keys).union(started.keys).sorted().map { key in
            let b = seconds[key] ?? (HistogramCodec.make(), 0, 0)
            return Second(second: key, started: started.isEmpty ? nil : started[key] ?? 0, succeeded: b.ok, failed: b.failed,
                          p50: ms(b.histogram.valueAtPercentile(50)), p99: ms(b.histogram.valueAtPercentile(99)),
                          histogram: HistogramCodec.encode(b.histogram))
        }
    }

    static func ms(_ micros: UInt64) -> Double { Double(micros) / 1000 }

    static func step(_ h: Histogram<UInt64>) -> Step {
        Step(count: h.totalCount, latencyMs: latency(h), histogram: HistogramCodec.encode(h))
    }
}

/// The process's own CPU time (user + system), for the tool's cost per iteration.
public enum ProcessCPU {
    /// CPU seconds (user + system) this process has used.
    public static func seconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return s(usage.ru_utime) + s(usage.ru_stime)
    }
}

extension LoadReport.RunInfo {
    /// This host and tool, at `measuredFrom`.
    static func here(measuredFrom: Date, options: [String: String], participants: Int?, timeout: Duration?, cpuSeconds: Double,
                     iterations: Int) -> LoadReport.RunInfo {
        LoadReport.RunInfo(tool: "survey-cli", version: TrioVersion.current, measuredFrom: WireTime.format(measuredFrom, milliseconds: true),
                           measuredFromMs: WireTime.epochMillis(measuredFrom), host: ProcessInfo.processInfo.hostName,
                           cores: ProcessInfo.processInfo.activeProcessorCount, options: options, participants: participants,
                           timeoutSeconds: timeout.map { $0.seconds }, toolCPUSeconds: cpuSeconds,
                           toolCPUMsPerIteration: iterations > 0 ? cpuSeconds * 1000 / Double(iterations) : nil)
    }
}
