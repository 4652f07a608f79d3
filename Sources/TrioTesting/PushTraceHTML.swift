import Foundation
import SurveyWire

extension PushTrace {
    /// The journey as one self-contained HTML page: a timeline drawn as inline SVG (one row per step, a bar from the
    /// journey's start to the step, coloured by process) and the steps as a table; where it stopped, in red.
    public func html() -> String {
        let esc = SVGChart.escape
        let times = steps.map { WireTime.parse($0.at) }
        let start = times.compactMap { $0 }.min()
        let end = times.compactMap { $0 }.max()
        let span = max(0.001, (end ?? Date()).timeIntervalSince(start ?? Date()))
        let colors = ["mock-server": "#1f77b4", "push-relay": "#ff7f0e", "device": "#2ca02c"]
        let rowHeight = 26.0, left = 110.0, width = 720.0, right = 150.0
        let height = Double(steps.count) * rowHeight + 40
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"push timeline\"><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>"
        let plot = width - left - right
        for (index, step) in steps.enumerated() {
            let y = 20 + Double(index) * rowHeight
            let offset = times[index].map { $0.timeIntervalSince(start ?? $0) } ?? 0
            let x = left + offset / span * plot
            let color = colors[step.process] ?? "#777"
            svg += "<text x=\"\(left - 8)\" y=\"\(y + 15)\" font-size=\"12\" text-anchor=\"end\" font-family=\"sans-serif\">\(esc(step.step))</text>"
            svg += "<rect class=\"step\" x=\"\(left)\" y=\"\(y + 6)\" width=\"\(String(format: "%.1f", max(2, x - left)))\" height=\"12\" fill=\"\(color)\" opacity=\"0.8\"/>"
            svg += "<text x=\"\(String(format: "%.1f", x + 6))\" y=\"\(y + 16)\" font-size=\"11\" font-family=\"sans-serif\" fill=\"#444\">"
                + "\(esc(String(format: "+%.3f s", offset)))  \(esc(step.process))</text>"
        }
        svg += "</svg>"
        var table = "<table><tr><th>step</th><th>at</th><th>process</th><th>detail</th></tr>"
        for step in steps {
            table += "<tr><td>\(esc(step.step))</td><td>\(esc(step.at))</td><td>\(esc(step.process))</td><td>\(esc(step.detail ?? ""))</td></tr>"
        }
        table += "</table>"
        let verdict = stoppedAt.map { "<p class=\"fail\">stopped at: \(esc($0))</p>" } ?? "<p class=\"pass\">complete</p>"
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>push \(esc(push))</title>
            <style>body{font-family:sans-serif;margin:24px;color:#222;max-width:760px}svg{border:1px solid #eee;display:block;margin:12px 0}
            table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;font-size:13px;text-align:left}
            .pass{color:#1a7f37}.fail{color:#c0392b}</style></head><body>
            <h1>Push \(esc(push))</h1><p>participant \(esc(participant))</p>\(verdict)\(svg)\(table)</body></html>
            """
    }
}
