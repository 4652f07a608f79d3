import Foundation
import TrioTesting
import Histogram

/// A load report as one self-contained HTML page (`--html FILE`): inline SVG charts drawn by `SVGChart`, no script and
/// nothing fetched when it is viewed. Completions, errors and offered starts per second; p50/p90/p99 per second; the
/// latency percentile distribution (log scale, as HdrHistogram plots it); per-step latencies; errors by kind; the run's
/// options; thresholds with pass/fail; for a merged run, each shard's completions.
public enum LoadHTML {
    /// The run's overall verdict, as `survey-cli load` exits: fail (99) when correctness failed or a threshold did not
    /// hold, pass (0) otherwise; with the reason.
    public static func verdict(_ report: LoadReport) -> (passed: Bool, reason: String) {
        var failures: [String] = []
        if report.correct == false { failures.append("correctness failed") }
        let failed = report.thresholds.filter { !$0.value }.keys.sorted()
        if !failed.isEmpty { failures.append("threshold\(failed.count == 1 ? "" : "s") not met: " + failed.joined(separator: ", ")) }
        if !failures.isEmpty { return (false, failures.joined(separator: "; ")) }
        let held = report.thresholds.count
        return (true, (report.correct == true ? "correctness held" : "correctness not checked")
                    + (held > 0 ? ", \(held) threshold\(held == 1 ? "" : "s") met" : ", no thresholds"))
    }

    /// The report as one self-contained HTML page (charts drawn in inline SVG), with each shard's figures when given.
    public static func render(_ report: LoadReport, shards: [LoadReport] = []) -> String {
        var body = ""
        let esc = SVGChart.escape
        body += "<h1>\(esc(report.scenario)) <small>(\(esc(report.model)))</small></h1>"
        let verdict = Self.verdict(report)
        body += "<p class=\"verdict \(verdict.passed ? "pass" : "fail")\">\(verdict.passed ? "PASS" : "FAIL") (exit \(verdict.passed ? 0 : 99)): \(esc(verdict.reason))</p>"
        body += "<p class=\"target\">against \(esc(report.target))"
        if let run = report.run {
            body += " · \(esc(run.tool)) \(esc(run.version)) · window from \(esc(run.measuredFrom)) · \(esc(run.host)), \(run.cores) cores"
            if let merged = run.mergedFrom { body += " · merged from \(merged) reports" }
        }
        body += "</p>"
        let t = report.totals
        var summary: [(String, String)] = [("started", "\(t.started)"), ("succeeded", "\(t.succeeded)"), ("failed", "\(t.failed)"),
                                           ("dropped", "\(t.dropped)"), ("throughput", String(format: "%.2f/s", t.throughput)),
                                           ("error rate", String(format: "%.2f%%", t.errorRate * 100)),
                                           ("p50", ms(report.latencyMs.p50)), ("p99", ms(report.latencyMs.p99)), ("max", ms(report.latencyMs.max))]
        if let offered = t.offeredRate { summary.insert(("offered", String(format: "%.2f/s", offered)), at: 5) }
        body += "<div class=\"cards\">" + summary.map { "<div><b>\(esc($0.1))</b><span>\(esc($0.0))</span></div>" }.joined() + "</div>"
        if let correctness = report.correctness {
            let state = report.correct.map { $0 ? "pass" : "fail" } ?? "skip"
            body += "<p class=\"\(state)\">correctness (\(state)): \(esc(correctness))</p>"
        }

        // Over time. The run's last second is usually partial (the window and the drain end mid-second): its counts
        // are drawn per second of the part it covered, and a note says so, so the line does not fall at the end.
        let rows = report.perSecond
        let end = t.seconds + (t.drainSeconds ?? 0)
        func rate(_ row: LoadReport.Second, _ count: Int) -> Double {
            let covered = end - Double(row.second)
            return covered > 0.05 && covered < 1 ? Double(count) / covered : Double(count)
        }
        var rateSeries = [SVGChart.Series(name: "completions/s", color: "#1f77b4", points: rows.map { (Double($0.second), rate($0, $0.succeeded)) }),
                          SVGChart.Series(name: "errors/s", color: "#d62728", points: rows.map { (Double($0.second), rate($0, $0.failed)) })]
        if rows.contains(where: { $0.started != nil }) {
            rateSeries.append(.init(name: "started/s", color: "#999", points: rows.map { (Double($0.second), rate($0, $0.started ?? 0)) }))
        }
        let palette = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
        for (index, shard) in shards.enumerated() {
            rateSeries.append(.init(name: "shard \(index + 1)", color: palette[index % palette.count],
                                    points: shard.perSecond.map { (Double($0.second), Double($0.succeeded)) }))
        }
        body += SVGChart(title: "Throughput over time", xLabel: "seconds since the window opened", yLabel: "per second", series: rateSeries).render()
        if let last = rows.last, end - Double(last.second) > 0.05, end - Double(last.second) < 1 {
            body += "<p class=\"note\">The last second (\(last.second)) covered \(String(format: "%.2f", end - Double(last.second))) s of the run: "
                + "its rates are its counts over that part, per second (a partial second, not a fall).</p>"
        }
        var p50: [(Double, Double)] = [], p90: [(Double, Double)] = [], p99: [(Double, Double)] = []
        for row in rows where row.succeeded + row.failed > 0 {
            let x = Double(row.second)
            if let text = row.histogram, let h = try? HistogramCodec.decode(text) {
                p50.append((x, Double(h.valueAtPercentile(50)) / 1000))
                p90.append((x, Double(h.valueAtPercentile(90)) / 1000))
                p99.append((x, Double(h.valueAtPercentile(99)) / 1000))
            } else {
                p50.append((x, row.p50))
                p99.append((x, row.p99))
            }
        }
        body += SVGChart(title: "Latency over time", xLabel: "seconds since the window opened", yLabel: "ms",
                         series: [.init(name: "p50", color: "#1f77b4", points: p50), .init(name: "p90", color: "#ff7f0e", points: p90),
                                  .init(name: "p99", color: "#d62728", points: p99)]).render()

        // Percentile distribution, as HdrHistogram plots it: x = 1 / (1 - percentile), log scale.
        if let text = report.histogram, let h = try? HistogramCodec.decode(text), h.totalCount > 0 {
            var series = [SVGChart.Series(name: "all", color: "#1f77b4", points: distribution(h))]
            for (name, step) in (report.steps ?? [:]).sorted(by: { $0.key < $1.key }) {
                if let s = try? HistogramCodec.decode(step.histogram), s.totalCount > 0 {
                    series.append(.init(name: name, color: palette[series.count % palette.count], points: distribution(s)))
                }
            }
            let ticks: [(Double, String)] = [(2, "50%"), (10, "90%"), (100, "99%"), (1000, "99.9%"), (10_000, "99.99%"), (100_000, "99.999%")]
            body += SVGChart(title: "Latency by percentile", xLabel: "percentile", yLabel: "ms", series: series, logX: true, xTicks: ticks).render()
        }

        // Tables.
        func table(_ title: String, _ header: [String], _ rows: [[String]], classes: [String]? = nil) -> String {
            guard !rows.isEmpty else { return "" }
            var html = "<h2>\(esc(title))</h2><table><tr>" + header.map { "<th>\(esc($0))</th>" }.joined() + "</tr>"
            for (index, row) in rows.enumerated() {
                let cls = classes.map { " class=\"\($0[index])\"" } ?? ""
                html += "<tr\(cls)>" + row.map { "<td>\(esc($0))</td>" }.joined() + "</tr>"
            }
            return html + "</table>"
        }
        let thresholds = report.thresholds.sorted { $0.key < $1.key }
        body += table("Thresholds", ["rule", "result"], thresholds.map { [$0.key, $0.value ? "pass" : "FAIL"] },
                      classes: thresholds.map { $0.value ? "pass" : "fail" })
        body += table("Steps", ["step", "count", "p50", "p99", "max"], (report.steps ?? [:]).sorted { $0.key < $1.key }.map {
            [$0.key, "\($0.value.count)", ms($0.value.latencyMs.p50), ms($0.value.latencyMs.p99), ms($0.value.latencyMs.max)]
        })
        body += table("Errors by kind", ["kind", "count"], report.errors.sorted { $0.value > $1.value }.map { [$0.key, "\($0.value)"] })
        if let run = report.run {
            var options = run.options.sorted { $0.key < $1.key }.map { ["--\($0.key)", $0.value] }
            if let timeout = run.timeoutSeconds { options.append(["timeout (s)", String(timeout)]) }
            if let cpu = run.toolCPUMsPerIteration { options.append(["tool CPU per iteration", String(format: "%.3f ms", cpu)]) }
            body += table("Run", ["option", "value"], options)
        }
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(esc(report.scenario)) load report</title>
            <style>body{font-family:sans-serif;margin:24px;color:#222;max-width:760px}h1 small{color:#666;font-weight:400}
            .target{color:#555}.cards{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0}.cards div{border:1px solid #ddd;
            border-radius:6px;padding:6px 10px;min-width:80px}.cards b{display:block;font-size:16px}.cards span{color:#666;
            font-size:12px}svg.chart{display:block;margin:16px 0;border:1px solid #eee}table{border-collapse:collapse;
            margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:13px}.pass{color:#1a7f37}
            .fail{color:#c0392b}.skip{color:#777}</style></head><body>\(body)</body></html>
            """
    }

    /// (1 / (1 - percentile), ms) points of a histogram, up to the last percentile below 100.
    static func distribution(_ h: Histogram<UInt64>) -> [(x: Double, y: Double)] {
        var points: [(x: Double, y: Double)] = []
        for step in h.percentiles(ticksPerHalfDistance: 5) where step.percentileLevelIteratedTo < 100 {
            points.append((1 / (1 - step.percentileLevelIteratedTo / 100), Double(step.value) / 1000))
        }
        return points
    }

    static func ms(_ value: Double) -> String { String(format: "%.2f ms", value) }
}
