/// A calendar date with no time zone (`YYYY-MM-DD`), proleptic Gregorian.
public struct LocalDate: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    /// A date; returns nil for an impossible one (month 13, February 30).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...LocalDate.daysIn(year, month)).contains(day) else {
            return nil
        }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
        else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// The date `days` days after 1970-01-01.
    public init(daysSinceEpoch days: Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days since 1970-01-01 (negative before).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    /// Day of the week, 0 = Sunday (Beiwe's convention).
    public var dayOfWeek: Int {
        // 1970-01-01 was a Thursday (4).
        let d = (daysSinceEpoch + 4) % 7
        return d < 0 ? d + 7 : d
    }

    /// The date `n` days later (earlier for negative `n`).
    public func adding(days n: Int) -> LocalDate { LocalDate(daysSinceEpoch: daysSinceEpoch + n) }

    public var description: String {
        func pad(_ v: Int, _ w: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, w - s.count)) + s }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { a.daysSinceEpoch < b.daysSinceEpoch }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let date = LocalDate(text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not a valid YYYY-MM-DD date")
        }
        self = date
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    static func daysIn(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// A wall-clock time of day at minute resolution.
public struct LocalTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var hour: Int
    public var minute: Int
    public init(hour: Int, minute: Int) {
        self.hour = hour
        self.minute = minute
    }
    /// Seconds after local midnight.
    public var secondsOfDay: Int { hour * 3600 + minute * 60 }
    public var description: String { (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)" }
    public static func < (a: LocalTime, b: LocalTime) -> Bool { a.secondsOfDay < b.secondsOfDay }
}
