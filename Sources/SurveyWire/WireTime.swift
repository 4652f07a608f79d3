import Foundation
import Scheduling

/// RFC 3339 UTC timestamps (`2026-05-04T13:45:00Z`) and Beiwe's `sent_time` form, without `DateFormatter`.
public enum WireTime {
    /// Formats as RFC 3339 UTC with whole seconds, or milliseconds when `milliseconds` is true.
    public static func format(_ date: Date, milliseconds: Bool = false) -> String {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = floorDiv(totalMillis, 1000)
        let millis = totalMillis - seconds * 1000
        let (y, mo, d, h, mi, s) = civil(seconds)
        guard (0...9999).contains(y) else {
            var text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", y, mo, d, h, mi, s)
            if milliseconds { text += String(format: ".%03d", Int(millis)) }
            return text + "Z"
        }
        // Digits written straight into bytes: `String(format:)` was a few percent of a registration's CPU.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func put(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(48 + rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        put(Int(y), 4); bytes.append(0x2D); put(Int(mo), 2); bytes.append(0x2D); put(Int(d), 2); bytes.append(0x54)
        put(Int(h), 2); bytes.append(0x3A); put(Int(mi), 2); bytes.append(0x3A); put(Int(s), 2)
        if milliseconds {
            bytes.append(0x2E)
            put(Int(millis), 3)
        }
        bytes.append(0x5A)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An HTTP date (RFC 9110 IMF-fixdate, `Sun, 22 Nov 2026 18:00:00 GMT`), whole seconds, without `DateFormatter`.
    public static func httpDate(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (y, mo, d, h, mi, s) = civil(seconds)
        // 1970-01-01 was a Thursday.
        let weekday = Int((floorDiv(seconds, 86400) % 7 + 11) % 7)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = String(y)
        return "\(days[weekday]), \(two(d)) \(months[mo - 1]) \(String(repeating: "0", count: max(0, 4 - year.count)))\(year) "
            + "\(two(h)):\(two(mi)):\(two(s)) GMT"
    }

    /// Beiwe's push `sent_time`: `%Y-%m-%dT%H:%M:%S` in UTC, with no zone suffix.
    public static func beiweSentTime(_ date: Date) -> String {
        String(format(date).prefix(19))
    }

    /// Parses RFC 3339 (`Z` or `±HH:MM` offset, optional fraction). Returns nil when malformed.
    public static func parse(_ text: String) -> Date? {
        let u = Array(text.utf8)
        guard u.count >= 20 else { return nil }
        func num(_ from: Int, _ len: Int) -> Int? {
            guard from + len <= u.count else { return nil }
            var v = 0
            for i in from..<(from + len) {
                guard u[i] >= 48, u[i] <= 57 else { return nil }
                v = v * 10 + Int(u[i] - 48)
            }
            return v
        }
        guard let y = num(0, 4), u[4] == 45, let mo = num(5, 2), u[7] == 45, let d = num(8, 2),
              u[10] == 84 || u[10] == 116, let h = num(11, 2), u[13] == 58, let mi = num(14, 2), u[16] == 58,
              let s = num(17, 2)
        else { return nil }
        guard LocalDate(year: y, month: mo, day: d) != nil, h < 24, mi < 60, s < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if i < u.count, u[i] == 46 {
            i += 1
            var scale = 0.1
            let start = i
            while i < u.count, u[i] >= 48, u[i] <= 57 { fraction += Double(u[i] - 48) * scale; scale /= 10; i += 1 }
            guard i > start else { return nil }
        }
        guard i < u.count else { return nil }
        var offset = 0
        if u[i] == 90 || u[i] == 122 {
            i += 1
        } else if u[i] == 43 || u[i] == 45 {
            guard let oh = num(i + 1, 2), i + 3 < u.count, u[i + 3] == 58, let om = num(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = (oh * 3600 + om * 60) * (u[i] == 43 ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == u.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        let secs = Double(days * 86400 + Int64(h * 3600 + mi * 60 + s) - Int64(offset))
        return Date(timeIntervalSince1970: secs + fraction)
    }

    /// Milliseconds since the Unix epoch.
    public static func epochMillis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    static func daysFromCivil(_ y: Int, _ m: Int, _ d: Int) -> Int64 {
        Int64(LocalDate(year: y, month: m, day: d)?.daysSinceEpoch ?? 0)
    }

    static func civil(_ epochSeconds: Int64) -> (Int, Int, Int, Int, Int, Int) {
        let days = floorDiv(epochSeconds, 86400)
        let rem = Int(epochSeconds - days * 86400)
        let date = LocalDate(daysSinceEpoch: Int(days))
        return (date.year, date.month, date.day, rem / 3600, (rem % 3600) / 60, rem % 60)
    }
}

extension Duration {
    /// Seconds as a floating-point number.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
