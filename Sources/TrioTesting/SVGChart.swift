import Foundation

/// A line chart drawn as inline SVG (no script, nothing fetched): series of (x, y) points on linear or log-10 axes with
/// ticks, a legend and a title. Small on purpose: what a load report needs and nothing else.
package struct SVGChart {
    package struct Series {
        var name: String
        var color: String
        var points: [(x: Double, y: Double)]

        package init(name: String, color: String, points: [(x: Double, y: Double)]) {
            self.name = name
            self.color = color
            self.points = points
        }
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series]
    var logX = false
    /// Custom x tick labels (value → text), e.g. percentiles on a log axis.
    var xTicks: [(Double, String)]? = nil
    var width = 720.0
    var height = 300.0

    package init(title: String, xLabel: String, yLabel: String, series: [Series], logX: Bool = false, xTicks: [(Double, String)]? = nil) {
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.series = series
        self.logX = logX
        self.xTicks = xTicks
    }

    private let left = 64.0, right = 16.0, top = 52.0, bottom = 48.0

    package func render() -> String {
        let all = series.flatMap(\.points).filter { $0.x.isFinite && $0.y.isFinite }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(Self.escape(title))\">"
        svg += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>"
        svg += text(width / 2, 20, title, anchor: "middle", size: 14, weight: "600")
        guard !all.isEmpty else {
            return svg + text(width / 2, height / 2, "no data", anchor: "middle", size: 12) + "</svg>"
        }
        func fx(_ x: Double) -> Double { logX ? log10(max(x, 1e-9)) : x }
        let xs = all.map { fx($0.x) }
        let (x0, x1) = (xs.min()!, max(xs.max()!, xs.min()! + 1e-9))
        let y1 = Self.niceCeiling(max(all.map(\.y).max()!, 1e-9))
        let plotW = width - left - right, plotH = height - top - bottom
        func px(_ x: Double) -> Double { left + (fx(x) - x0) / (x1 - x0) * plotW }
        func py(_ y: Double) -> Double { top + plotH - y / y1 * plotH }
        // Axes and grid.
        svg += "<g stroke=\"#ccc\" stroke-width=\"1\">"
        for i in 0...4 {
            let y = y1 * Double(i) / 4
            svg += "<line x1=\"\(f(left))\" y1=\"\(f(py(y)))\" x2=\"\(f(width - right))\" y2=\"\(f(py(y)))\"/>"
        }
        svg += "</g>"
        for i in 0...4 {
            let y = y1 * Double(i) / 4
            svg += text(left - 6, py(y) + 4, Self.number(y), anchor: "end", size: 11)
        }
        let ticks: [(Double, String)] = xTicks ?? (0...5).map { i in
            let v = x0 + (x1 - x0) * Double(i) / 5
            return (v, Self.number(v))
        }
        for (value, label) in ticks where (logX ? log10(max(value, 1e-9)) : value) >= x0 - 1e-9 && (logX ? log10(max(value, 1e-9)) : value) <= x1 + 1e-9 {
            let x = px(value)
            svg += "<line x1=\"\(f(x))\" y1=\"\(f(top + plotH))\" x2=\"\(f(x))\" y2=\"\(f(top + plotH + 4))\" stroke=\"#888\"/>"
            svg += text(x, top + plotH + 16, label, anchor: "middle", size: 11)
        }
        svg += "<line x1=\"\(f(left))\" y1=\"\(f(top + plotH))\" x2=\"\(f(width - right))\" y2=\"\(f(top + plotH))\" stroke=\"#888\"/>"
        svg += text(left + plotW / 2, height - 8, xLabel, anchor: "middle", size: 12)
        svg += "<text x=\"14\" y=\"\(f(top + plotH / 2))\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 \(f(top + plotH / 2)))\">\(Self.escape(yLabel))</text>"
        // Series and legend.
        for (index, s) in series.enumerated() {
            let points = s.points.filter { $0.x.isFinite && $0.y.isFinite }
            guard !points.isEmpty else { continue }
            let d = points.enumerated().map { i, p in "\(i == 0 ? "M" : "L")\(f(px(p.x))),\(f(py(p.y)))" }.joined(separator: " ")
            svg += "<path class=\"series\" d=\"\(d)\" fill=\"none\" stroke=\"\(s.color)\" stroke-width=\"2\"/>"
            let lx = left + 8 + Double(index) * 130
            svg += "<rect x=\"\(f(lx))\" y=\"\(f(top - 16))\" width=\"12\" height=\"3\" fill=\"\(s.color)\"/>"
            svg += text(lx + 16, top - 12, s.name, anchor: "start", size: 11)
        }
        return svg + "</svg>"
    }

    private func text(_ x: Double, _ y: Double, _ content: String, anchor: String, size: Int, weight: String = "400") -> String {
        "<text x=\"\(f(x))\" y=\"\(f(y))\" font-size=\"\(size)\" font-weight=\"\(weight)\" text-anchor=\"\(anchor)\" "
            + "font-family=\"sans-serif\" fill=\"#222\">\(Self.escape(content))</text>"
    }

    private func f(_ v: Double) -> String { String(format: "%.1f", v) }

    static func niceCeiling(_ v: Double) -> Double {
        let magnitude = pow(10, floor(log10(v)))
        for step in [1.0, 2, 2.5, 5, 10] where step * magnitude >= v { return step * magnitude }
        return 10 * magnitude
    }

    static func number(_ v: Double) -> String {
        if v == 0 { return "0" }
        if abs(v) >= 100 { return String(format: "%.0f", v) }
        if abs(v) >= 10 { return String(format: "%.1f", v) }
        return String(format: "%.2f", v)
    }

    package static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
