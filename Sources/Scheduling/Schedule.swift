/// One schedule entry of a survey (PROTOCOL.md §2). All times are the participant's local wall-clock time.
public enum Schedule: Sendable, Hashable, Codable {
    /// Every week on `dayOfWeek` (0 = Sunday) at `hour:minute`, optionally limited to `from...until` (inclusive).
    case weekly(dayOfWeek: Int, time: LocalTime, from: DateBound?, until: DateBound?)
    /// Once, on a calendar date.
    case absolute(date: LocalDate, time: LocalTime)
    /// Once, `daysAfter` days after an anchor date.
    case relative(daysAfter: Int, time: LocalTime, anchor: Anchor)

    /// A bound of a weekly schedule: a calendar date, or a day count after registration (registration day = 0).
    public enum DateBound: Sendable, Hashable {
        case date(LocalDate)
        case daysAfterRegistration(Int)
    }

    /// What a relative schedule counts from.
    public enum Anchor: Sendable, Hashable {
        case registration
        case intervention(String)
    }

    /// The local time of day of the entry.
    public var time: LocalTime {
        switch self {
        case .weekly(_, let t, _, _), .absolute(_, let t), .relative(_, let t, _): t
        }
    }

    // MARK: Codable (the wire shape, with strict validation)

    enum Keys: String, CodingKey, CaseIterable {
        case type, day_of_week, hour, minute, from, until, date, days_after, anchor
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.container(keyedBy: AnyKey.self)
        let allowed: Set<String>
        let c = try decoder.container(keyedBy: Keys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "weekly": allowed = ["type", "day_of_week", "hour", "minute", "from", "until"]
        case "absolute": allowed = ["type", "date", "hour", "minute"]
        case "relative": allowed = ["type", "days_after", "hour", "minute", "anchor"]
        default: throw ScheduleError(code: "invalid_schedule_type", field: "type", message: "unknown schedule type '\(type)'")
        }
        for key in raw.allKeys where !allowed.contains(key.stringValue) {
            throw ScheduleError(code: "unknown_field", field: key.stringValue, message: "'\(key.stringValue)' is not a field of a \(type) schedule")
        }
        func int(_ key: Keys) throws -> Int {
            guard c.contains(key) else { throw ScheduleError(code: "missing_field", field: key.rawValue, message: "\(key.rawValue) is required") }
            guard let v = try? c.decode(Int.self, forKey: key) else {
                throw ScheduleError(code: "invalid_field", field: key.rawValue, message: "\(key.rawValue) must be an integer")
            }
            return v
        }
        func date(_ key: Keys) throws -> LocalDate {
            guard let text = try? c.decode(String.self, forKey: key) else {
                throw ScheduleError(code: c.contains(key) ? "invalid_field" : "missing_field", field: key.rawValue, message: "\(key.rawValue) must be a YYYY-MM-DD date")
            }
            guard let d = LocalDate(text) else {
                throw ScheduleError(code: "invalid_date", field: key.rawValue, message: "'\(text)' is not a real calendar date")
            }
            return d
        }
        func bound(_ key: Keys) throws -> DateBound? {
            guard c.contains(key) else { return nil }
            if (try? c.decodeNil(forKey: key)) == true { return nil }
            if let text = try? c.decode(String.self, forKey: key) {
                guard let d = LocalDate(text) else {
                    throw ScheduleError(code: "invalid_date", field: key.rawValue, message: "'\(text)' is not a real calendar date")
                }
                return .date(d)
            }
            if let obj = try? c.decode([String: Int].self, forKey: key), obj.count == 1, let n = obj["day"] {
                guard n >= 0 else { throw ScheduleError(code: "invalid_field", field: key.rawValue, message: "day must be >= 0") }
                return .daysAfterRegistration(n)
            }
            throw ScheduleError(code: "invalid_field", field: key.rawValue, message: "\(key.rawValue) must be a date or {\"day\": n}")
        }
        let time = LocalTime(hour: try int(.hour), minute: try int(.minute))
        switch type {
        case "weekly":
            self = .weekly(dayOfWeek: try int(.day_of_week), time: time, from: try bound(.from), until: try bound(.until))
        case "absolute":
            self = .absolute(date: try date(.date), time: time)
        default:
            let anchor: Anchor
            if !c.contains(.anchor) {
                anchor = .registration
            } else if let text = try? c.decode(String.self, forKey: .anchor), text == "registration" {
                anchor = .registration
            } else if let obj = try? c.decode([String: String].self, forKey: .anchor), obj.count == 1,
                      let name = obj["intervention"], !name.isEmpty {
                anchor = .intervention(name)
            } else {
                throw ScheduleError(code: "invalid_field", field: "anchor", message: "anchor must be \"registration\" or {\"intervention\": name}")
            }
            self = .relative(daysAfter: try int(.days_after), time: time, anchor: anchor)
        }
        try validate()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyKey.self)
        func put(_ key: String, _ value: some Encodable) throws { try c.encode(value, forKey: AnyKey(stringValue: key)) }
        func putBound(_ key: String, _ b: DateBound?) throws {
            switch b {
            case .none: break
            case .date(let d): try put(key, d)
            case .daysAfterRegistration(let n): try put(key, ["day": n])
            }
        }
        try put("hour", time.hour)
        try put("minute", time.minute)
        switch self {
        case .weekly(let day, _, let from, let until):
            try put("type", "weekly"); try put("day_of_week", day); try putBound("from", from); try putBound("until", until)
        case .absolute(let date, _):
            try put("type", "absolute"); try put("date", date)
        case .relative(let days, _, let anchor):
            try put("type", "relative"); try put("days_after", days)
            switch anchor {
            case .registration: try put("anchor", "registration")
            case .intervention(let name): try put("anchor", ["intervention": name])
            }
        }
    }

    /// The day counts a schedule may name (`days_after`, `{"day": n}`): 0 to 10 years. Larger counts are no study's, and
    /// bounding them keeps date arithmetic on them (anchor + n days) far from overflow.
    public static let dayCounts = 0...3650

    /// Checks ranges: day 0–6, hour 0–23, minute 0–59, days_after and `{"day": n}` in ``dayCounts``, and `until` not
    /// before `from` when both are calendar dates (or both day counts).
    public func validate() throws(ScheduleError) {
        let t = time
        guard (0...23).contains(t.hour) else { throw ScheduleError(code: "out_of_range", field: "hour", message: "hour must be 0-23, got \(t.hour)") }
        guard (0...59).contains(t.minute) else { throw ScheduleError(code: "out_of_range", field: "minute", message: "minute must be 0-59, got \(t.minute)") }
        switch self {
        case .weekly(let day, _, let from, let until):
            guard (0...6).contains(day) else { throw ScheduleError(code: "out_of_range", field: "day_of_week", message: "day_of_week must be 0 (Sunday) to 6, got \(day)") }
            var backwards = false
            if case .date(let a)? = from, case .date(let b)? = until { backwards = b < a }
            if case .daysAfterRegistration(let a)? = from, case .daysAfterRegistration(let b)? = until { backwards = b < a }
            for (field, bound) in [("from", from), ("until", until)] {
                if case .daysAfterRegistration(let n)? = bound, !Self.dayCounts.contains(n) {
                    throw ScheduleError(code: "out_of_range", field: field, message: "\(field).day must be 0-\(Self.dayCounts.upperBound), got \(n)")
                }
            }
            if backwards { throw ScheduleError(code: "until_before_from", field: "until", message: "until is before from") }
        case .absolute: break
        case .relative(let days, _, _):
            guard Self.dayCounts.contains(days) else {
                throw ScheduleError(code: "out_of_range", field: "days_after", message: "days_after must be 0-\(Self.dayCounts.upperBound), got \(days)")
            }
        }
    }
}

/// A schedule that cannot be used, naming the field at fault.
public struct ScheduleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable code: `out_of_range`, `invalid_date`, `until_before_from`, `unknown_field`, `missing_field`, ...
    public var code: String
    /// The schedule field at fault.
    public var field: String
    public var message: String
    public init(code: String, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }
    public var description: String { "\(code) (\(field)): \(message)" }
}
