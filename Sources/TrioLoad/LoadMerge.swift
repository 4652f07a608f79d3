import Foundation
import Histogram

/// `survey-cli load merge`: one report from the reports of several machines (or shards) that ran at the same time.
/// Histograms are added exactly (never percentiles averaged), per-second rows are aligned by wall clock, counts and
/// throughputs are summed, and the correctness passes combined.
public enum LoadMerge {
    /// Combines reports of runs made side by side (one per machine or process) into one: counts add, histograms add exactly, rows align by their wall-clock second.
    public static func merge(_ reports: [LoadReport]) throws(LoadUsageError) -> LoadReport {
        guard let first = reports.first else { throw LoadUsageError(flag: "REPORT", message: "give at least one report") }
        for report in reports where report.scenario != first.scenario || report.model != first.model {
            throw LoadUsageError(flag: "REPORT", message: "cannot merge \(first.scenario) (\(first.model)) with \(report.scenario) (\(report.model))")
        }
        func histogram(_ text: String?, _ what: String) throws(LoadUsageError) -> Histogram<UInt64> {
            guard let text else {
                throw LoadUsageError(flag: "REPORT", message: "\(what) has no histogram (a report of schema \(LoadReport.schemaVersion) is needed)")
            }
            do { return try HistogramCodec.decode(text) } catch { throw LoadUsageError(flag: "REPORT", message: "\(what): \(error)") }
        }
        guard reports.allSatisfy({ $0.run != nil }) else {
            throw LoadUsageError(flag: "REPORT", message: "every report needs its run section (schema \(LoadReport.schemaVersion))")
        }

        var overall = HistogramCodec.make()
        var steps: [String: Histogram<UInt64>] = [:]
        var errors: [String: Int] = [:]
        var rows: [Int: (histogram: Histogram<UInt64>, ok: Int, failed: Int, started: Int?)] = [:]
        var totals = LoadReport.Totals(started: 0, succeeded: 0, failed: 0, dropped: 0, late: 0, seconds: 0, throughput: 0, errorRate: 0,
                                       offeredRate: 0, completedInWindow: 0, drainSeconds: 0)
        let base = reports.map { $0.run!.measuredFromMs }.min()!
        for (index, report) in reports.enumerated() {
            let name = "report \(index + 1)"
            overall.add(try histogram(report.histogram, name))
            for (step, value) in report.steps ?? [:] {
                var merged = steps[step] ?? HistogramCodec.make()
                merged.add(try histogram(value.histogram, "\(name) step \(step)"))
                steps[step] = merged
            }
            for (key, count) in report.errors { errors[key, default: 0] += count }
            let offset = Int(((Double(report.run!.measuredFromMs - base)) / 1000).rounded())
            for row in report.perSecond {
                var merged = rows[row.second + offset] ?? (HistogramCodec.make(), 0, 0, nil)
                merged.histogram.add(try histogram(row.histogram, "\(name) second \(row.second)"))
                merged.ok += row.succeeded
                merged.failed += row.failed
                if let started = row.started { merged.started = (merged.started ?? 0) + started }
                rows[row.second + offset] = merged
            }
            let t = report.totals
            totals.started += t.started
            totals.succeeded += t.succeeded
            totals.failed += t.failed
            totals.dropped += t.dropped
            totals.late += t.late
            totals.seconds = max(totals.seconds, t.seconds)
            totals.throughput += t.throughput
            totals.offeredRate = (totals.offeredRate ?? 0) + (t.offeredRate ?? 0)
            totals.completedInWindow = (totals.completedInWindow ?? 0) + (t.completedInWindow ?? 0)
            totals.drainSeconds = max(totals.drainSeconds ?? 0, t.drainSeconds ?? 0)
        }
        let finished = totals.succeeded + totals.failed
        totals.errorRate = finished == 0 ? 0 : Double(totals.failed) / Double(finished)

        let verdicts = reports.compactMap(\.correct)
        let correct: Bool? = verdicts.isEmpty ? nil : !verdicts.contains(false)
        let correctness = reports.enumerated().compactMap { index, report in report.correctness.map { "report \(index + 1): \($0)" } }
            .joined(separator: " | ")

        let runs = reports.map { $0.run! }
        let cpu = runs.map(\.toolCPUSeconds).reduce(0, +)
        // Each report's CPU per iteration counts every iteration it ran (warm-up included): the same for the sum.
        let iterations = runs.compactMap { run in run.toolCPUMsPerIteration.map { run.toolCPUSeconds * 1000 / $0 } }.reduce(0, +)
        var run = runs.first { $0.measuredFromMs == base }!
        run.host = Array(Set(runs.map(\.host))).sorted().joined(separator: ",")
        run.cores = runs.map(\.cores).reduce(0, +)
        run.participants = runs.compactMap(\.participants).reduce(0, +)
        run.toolCPUSeconds = cpu
        run.toolCPUMsPerIteration = iterations > 0 ? cpu * 1000 / iterations : nil
        run.mergedFrom = reports.count

        var merged = LoadReport(
            scenario: first.scenario, model: first.model, target: Array(Set(reports.map(\.target))).sorted().joined(separator: ","),
            run: run, totals: totals, latencyMs: LoadReport.latency(overall), histogram: HistogramCodec.encode(overall),
            steps: steps.isEmpty ? nil : steps.mapValues(LoadReport.step), errors: errors,
            perSecond: rows.keys.sorted().map { key in
                let row = rows[key]!
                return LoadReport.Second(second: key, started: row.started, succeeded: row.ok, failed: row.failed,
                                         p50: LoadReport.ms(row.histogram.valueAtPercentile(50)),
                                         p99: LoadReport.ms(row.histogram.valueAtPercentile(99)), histogram: HistogramCodec.encode(row.histogram))
            },
            correct: correct, correctness: correctness.isEmpty ? nil : correctness, thresholds: [:])
        merged.errorSamples = Self.samples(reports)
        return merged
    }

    /// The shards' error samples together (the first shard's sample of a kind wins; at most ``LoadReport/maxErrorSamples``).
    static func samples(_ reports: [LoadReport]) -> [String: String]? {
        var merged: [String: String] = [:]
        for report in reports {
            for (kind, body) in (report.errorSamples ?? [:]).sorted(by: { $0.key < $1.key })
            where merged[kind] == nil && merged.count < LoadReport.maxErrorSamples {
                merged[kind] = body
            }
        }
        return merged.isEmpty ? nil : merged
    }

    /// `--shard I/N` (1 ≤ I ≤ N): the I-th of N contiguous, disjoint slices of `items` (together they are all of them).
    public static func shard<T>(_ items: [T], _ spec: String) throws(LoadUsageError) -> [T] {
        let parts = spec.split(separator: "/")
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, (1...n).contains(i) else {
            throw LoadUsageError(flag: "--shard", message: "'\(spec)' is not I/N with 1 <= I <= N, e.g. 2/4")
        }
        let lower = items.count * (i - 1) / n
        let upper = items.count * i / n
        return Array(items[lower..<upper])
    }
}
