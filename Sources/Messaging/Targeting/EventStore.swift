import Foundation
import Scheduling

/// The unit of an event counter (Nimbus behavior.rs). `Months` are 28 days and `Years` 365 days.
public enum EventInterval: String, Codable, CaseIterable, Sendable {
    case minutes = "Minutes", hours = "Hours", days = "Days", weeks = "Weeks", months = "Months", years = "Years"

    /// Length of one unit in seconds.
    public var seconds: Int64 {
        switch self {
        case .minutes: 60
        case .hours: 3600
        case .days: 86_400
        case .weeks: 7 * 86_400
        case .months: 28 * 86_400
        case .years: 365 * 86_400
        }
    }

    /// Buckets kept per event (Nimbus defaults: 60 / 72 / 56 / 52 / 12 / 4).
    public var bucketCount: Int {
        switch self {
        case .minutes: 60
        case .hours: 72
        case .days: 56
        case .weeks: 52
        case .months: 12
        case .years: 4
        }
    }

    /// Whole units from `then` to `now` (truncated toward zero, as chrono's `num_*`; months and years from whole days).
    func rotations(from then: Double, to now: Double) -> Int64 {
        let diff = now - then
        switch self {
        case .months, .years:
            let days = Int64(diff / 86_400)
            return days / (self == .months ? 28 : 365)
        default:
            return Int64(diff / Double(seconds))
        }
    }
}

/// One event's counts in one interval: `buckets[0]` is the current unit, `buckets[1]` the one before, and so on.
public struct IntervalCounter: Codable, Sendable, Equatable {
    public var buckets: [UInt64]
    public var bucketCount: Int
    /// Start of the current unit (seconds since 1970, UTC). New counters start at Jan 1 00:00:00 UTC of the year.
    public var start: Int64
    let interval: EventInterval

    init(interval: EventInterval, now: Double) {
        self.interval = interval
        bucketCount = interval.bucketCount
        buckets = [0]
        start = EventStore.januaryFirst(of: now)
    }

    /// Moves to the unit containing `now`: each whole unit passed pushes an empty bucket at the front and drops the
    /// oldest beyond `bucketCount`. A clock that went backwards changes nothing.
    mutating func advance(to now: Double) {
        let r = interval.rotations(from: Double(start), to: now)
        guard r > 0 else { return }
        start += r * interval.seconds
        let n = Int(min(Int64(bucketCount), r))
        if n + buckets.count > bucketCount { buckets.removeSubrange((bucketCount - n)...) }
        buckets.insert(contentsOf: repeatElement(0, count: n), at: 0)
    }

    mutating func increment(at index: Int, by count: UInt64) {
        guard index < bucketCount else { return }
        if index < buckets.count {
            buckets[index] &+= count
        } else {
            buckets.append(contentsOf: repeatElement(0, count: index - buckets.count))
            buckets.append(count)
        }
    }
}

/// The aggregation a query applies to the chosen buckets.
public enum EventQuery: String, Sendable, CaseIterable {
    case sum = "eventSum", countNonZero = "eventCountNonZero", averagePerInterval = "eventAveragePerInterval"
    case averagePerNonZeroInterval = "eventAveragePerNonZeroInterval", lastSeen = "eventLastSeen"

    /// What a query answers when the event, interval or start bucket is unknown: `f64::MAX` for `LastSeen`, else 0.
    public var errorValue: Double { self == .lastSeen ? Double.greatestFiniteMagnitude : 0 }

    func perform(_ buckets: ArraySlice<UInt64>, requested: Int) -> Double {
        switch self {
        case .sum: return Double(buckets.reduce(0, &+))
        case .countNonZero: return Double(buckets.filter { $0 > 0 }.count)
        case .averagePerInterval: return Double(buckets.reduce(0, &+)) / Double(requested)
        case .averagePerNonZeroInterval:
            let nonZero = buckets.filter { $0 > 0 }
            return nonZero.isEmpty ? 0 : Double(nonZero.reduce(0, &+)) / Double(nonZero.count)
        case .lastSeen:
            guard let first = buckets.firstIndex(where: { $0 > 0 }) else { return Double.greatestFiniteMagnitude }
            return Double(first - buckets.startIndex)
        }
    }
}

/// Nimbus's behavioural event store (reference §2.4), reproduced exactly and driven by an injected clock: counts per
/// event id in minute, hour, day, week, 28-day "month" and 365-day "year" buckets aligned to Jan 1 UTC. A value type;
/// the SDK persists it after each record.
///
/// One addition (bug B1): ``record(_:count:viewID:at:)`` with a view id counts an event once per view, however often
/// the same view reports it within ``viewWindowSeconds``.
public struct EventStore: Codable, Sendable, Equatable {
    public private(set) var events: [String: [String: IntervalCounter]] = [:]
    /// The last view id seen per event, and when.
    var lastViews: [String: LastView] = [:]
    /// How long a repeat from the same view is taken as the same view (seconds).
    public var viewWindowSeconds: Double = 2

    struct LastView: Codable, Sendable, Equatable {
        var viewID: String
        var at: Double
    }

    public init() {}

    /// Event ids recorded so far.
    public var eventIDs: [String] { events.keys.sorted() }

    /// Records `count` occurrences of `id` at `now`. With a `viewID`, a repeat from the same view within
    /// ``viewWindowSeconds`` is ignored (a screen reporting its appearance twice, Firefox bug FXIOS-9428).
    /// - Returns: false when the event was ignored as a repeat.
    @discardableResult
    public mutating func record(_ id: String, count: UInt64 = 1, viewID: String? = nil, at now: Date) -> Bool {
        let t = now.timeIntervalSince1970
        if let viewID {
            if let last = lastViews[id], last.viewID == viewID, abs(t - last.at) <= viewWindowSeconds { return false }
            lastViews[id] = LastView(viewID: viewID, at: t)
        }
        var counter = events[id] ?? Self.newCounter(now: t)
        for interval in EventInterval.allCases {
            counter[interval.rawValue]?.advance(to: t)
            counter[interval.rawValue]?.increment(at: 0, by: count)
        }
        events[id] = counter
        return true
    }

    /// Records occurrences that happened `secondsAgo` before `now` (Nimbus's `record_past_event`, for tests and
    /// back-filling). A time after the counter's current unit start is an error, as in Nimbus.
    public mutating func recordPast(_ id: String, count: UInt64 = 1, secondsAgo: Double, at now: Date) throws(JEXLError) {
        let t = now.timeIntervalSince1970
        let then = t - secondsAgo
        var counter = events[id] ?? Self.newCounter(now: t)
        for interval in EventInterval.allCases {
            guard var single = counter[interval.rawValue] else { continue }
            single.advance(to: t)
            let r = interval.rotations(from: then, to: Double(single.start))
            if r < 0 {
                throw JEXLError(code: "invalid_state", message: "cannot record \(id) in the future of its counter")
            } else if r == 0 {
                single.increment(at: Double(single.start) < then ? 0 : 1, by: count)
            } else {
                single.increment(at: 1 + Int(r), by: count)
            }
            counter[interval.rawValue] = single
        }
        events[id] = counter
    }

    public mutating func clear() {
        events = [:]
        lastViews = [:]
    }

    /// The query behind the event transforms: buckets `start ..< start + count` of `id`'s `interval` counter, advanced to
    /// `now` (the advance is not kept, as in Nimbus). Unknown events and a start outside the kept buckets give
    /// ``EventQuery/errorValue``.
    public func query(_ id: String, interval: EventInterval, count: Int, start: Int, kind: EventQuery, at now: Date) -> Double {
        guard var single = events[id]?[interval.rawValue] else { return kind.errorValue }
        single.advance(to: now.timeIntervalSince1970)
        guard start >= 0, start < single.buckets.count else { return kind.errorValue }
        let end = min(start.addingReportingOverflow(count).overflow ? Int.max : start + count, single.buckets.count)
        return kind.perform(single.buckets[start..<max(start, end)], requested: count)
    }

    /// The five event transforms, over this store as of `now`. Arguments follow Nimbus: `'id'|eventSum('Days', 7 [, 0])`,
    /// `'id'|eventLastSeen('Days' [, 0])`; a wrong count or type is `transform_parameter_error`, an unknown interval
    /// `interval_parse_error`.
    public func transforms(at now: Date) -> [String: JEXLTransform] {
        var result: [String: JEXLTransform] = [:]
        for kind in EventQuery.allCases {
            let store = self
            result[kind.rawValue] = { (args: [JSONValue]) throws -> JSONValue in
                try EventStore.run(store, kind, now, args)
            }
        }
        return result
    }

    static func run(_ store: EventStore, _ kind: EventQuery, _ now: Date, _ args: [JSONValue]) throws(JEXLError) -> JSONValue {
        let parsed = try arguments(args, kind: kind)
        return JEXLEvaluator.number(store.query(parsed.0, interval: parsed.1, count: parsed.2, start: parsed.3, kind: kind, at: now))
    }

    static func arguments(_ args: [JSONValue], kind: EventQuery) throws(JEXLError) -> (String, EventInterval, Int, Int) {
        let counting = kind != .lastSeen
        let range = counting ? 3...4 : 2...3
        guard range.contains(args.count) else {
            throw JEXLError(code: "transform_parameter_error",
                            message: "event transform \(kind.rawValue) requires \(counting ? "2-3" : "1-2") parameters, got \(args.count - 1)")
        }
        guard case .string(let id) = args[0] else {
            throw JEXLError(code: "transform_parameter_error", message: "\(kind.rawValue) needs an event id string before the `|`")
        }
        guard case .string(let name) = args[1] else {
            throw JEXLError(code: "transform_parameter_error", message: "\(kind.rawValue) needs an interval name")
        }
        guard let interval = EventInterval(rawValue: name) else {
            throw JEXLError(code: "interval_parse_error",
                            message: "`\(name)` is not an interval (Minutes, Hours, Days, Weeks, Months or Years, exactly)")
        }
        func index(_ value: JSONValue?, _ what: String) throws(JEXLError) -> Int {
            guard let value else { return 0 }
            guard case .number(let n) = value else {
                throw JEXLError(code: "transform_parameter_error", message: "\(kind.rawValue) requires a positive number as the \(what) parameter")
            }
            // Rust's `as usize`: negative saturates to 0.
            return n.isNaN || n < 0 ? 0 : (n >= Double(Int.max) ? Int.max : Int(n))
        }
        // (JSONValue is nil-literal-expressible: spell the absent argument as Optional.none.)
        if counting {
            return (id, interval, try index(args[2], "second"), try index(args.count > 3 ? .some(args[3]) : .none, "third"))
        }
        return (id, interval, Int.max, try index(args.count > 2 ? .some(args[2]) : .none, "second"))
    }

    static func newCounter(now: Double) -> [String: IntervalCounter] {
        Dictionary(uniqueKeysWithValues: EventInterval.allCases.map { ($0.rawValue, IntervalCounter(interval: $0, now: now)) })
    }

    /// Jan 1 00:00:00 UTC of the year containing `t` (seconds since 1970).
    static func januaryFirst(of t: Double) -> Int64 {
        let day = LocalDate(daysSinceEpoch: Int((t / 86_400).rounded(.down)))
        return Int64(LocalDate(year: day.year, month: 1, day: 1)!.daysSinceEpoch) * 86_400
    }
}

import SurveyWire
