import Foundation
import Scheduling

/// A decoded wire value outside the range the project accepts for its field.
///
/// Thrown by ``RangeChecked/checkRanges()``; the servers answer it as 400 with the code and the field.
public struct WireRangeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable code: `out_of_range` for a number, `too_long` for a text or a list.
    public var code: String
    /// The field at fault, as a dotted path (`ping_info.seq`).
    public var field: String
    /// Human-readable explanation.
    public var message: String

    /// Creates the value from its fields.
    public init(code: String = "out_of_range", field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// `code (field): message`.
    public var description: String { "\(code) (\(field)): \(message)" }

    /// Throws `out_of_range` unless `value` lies in `range`.
    public static func check<T: Comparable & Sendable>(_ value: T, in range: ClosedRange<T>, _ field: String) throws(WireRangeError) {
        guard range.contains(value) else {
            throw WireRangeError(field: field, message: "\(field) must be \(range.lowerBound)-\(range.upperBound), got \(value)")
        }
    }

    /// Throws `too_long` when a text has more than `limit` UTF-8 bytes.
    /// Length in Unicode scalars (code points), as JSON Schema's `maxLength` counts, so the API documents can state it.
    public static func check(_ text: String, maxLength limit: Int, _ field: String) throws(WireRangeError) {
        guard text.unicodeScalars.count <= limit else {
            throw WireRangeError(code: "too_long", field: field, message: "\(field) is longer than \(limit) characters")
        }
    }
}

/// A wire type that knows the ranges of its numbers and the sizes of its texts.
///
/// Every body a server decodes is checked here, once, right after JSON decoding (one place per wire type), so no
/// arithmetic further down (minutes to seconds, days to dates, sequence ranges) can overflow or grow without bound.
public protocol RangeChecked {
    /// Throws the first field outside its range.
    func checkRanges() throws(WireRangeError)
}

/// The limits of every ranged wire field (listed in docs/DECISIONS.md, "Limits").
public enum WireLimits {
    /// `max_delay_minutes` of a study: a minute to 30 days (the relay keeps a push at most 30 days anyway).
    public static let maxDelayMinutes = 1...43_200
    /// How far forward one clock move (`advance_seconds`, or `freeze_at` from the current time) may go: 400 days.
    /// Every due moment in between is walked, so the span bounds the work of one request.
    public static let clockMoveSeconds = 0...(400 * 86_400)
    /// The years a wire time may name (study clocks, intervention dates).
    public static let years = 1970...2999
    /// A telemetry ping's `ping_info.seq`: Glean's counter is an unsigned 32-bit number; we take the signed half.
    public static let pingSeq = 0...Int(Int32.max)
    /// Participants created by one `{"count": n}` request.
    public static let participantsPerRequest = 1...100_000
    /// The relay's `POST /__control/clock` advance, in seconds (the same 400 days as the server's clock moves).
    public static let relayClockAdvanceSeconds: ClosedRange<Int64> = 0...(400 * 86_400)
    /// Names and other short texts of the admin API (study, survey, intervention, feature and experiment names).
    public static let nameLength = 200
    /// A stored free-text field of the mobile API (`message` of a heartbeat, `device_status_report`).
    public static let freeTextLength = 64 * 1024
    /// Events in one telemetry ping (Glean's own batch is 500; a ping may carry a few batches).
    public static let pingEvents = 10_000
    /// A survey's questions and schedule entries.
    public static let surveyQuestions = 1_000
    /// Schedule entries in one survey.
    public static let surveySchedules = 1_000
}

extension AdminWire.CreateStudy: RangeChecked {
    /// Throws the first field outside its range.
    public func checkRanges() throws(WireRangeError) {
        try WireRangeError.check(name, maxLength: WireLimits.nameLength, "name")
        if let minutes = maxDelayMinutes { try WireRangeError.check(minutes, in: WireLimits.maxDelayMinutes, "max_delay_minutes") }
        if let clock, let at = WireTime.parse(clock.frozenAt) { try WireTime.checkYear(at, "clock.frozen_at") }
        if let interventions {
            try WireRangeError.check(interventions.count, in: 0...1_000, "interventions")
        }
    }
}

extension AdminWire.CreateParticipants: RangeChecked {
    /// Throws the first field outside its range.
    public func checkRanges() throws(WireRangeError) {
        if let count { try WireRangeError.check(count, in: WireLimits.participantsPerRequest, "count") }
        if let patientID { try WireRangeError.check(patientID, maxLength: 32, "patient_id") }
        if let password { try WireRangeError.check(password, maxLength: 256, "password") }
    }
}

extension AdminWire.CreateSurvey: RangeChecked {
    /// Throws the first field outside its range.
    public func checkRanges() throws(WireRangeError) {
        try WireRangeError.check(name, maxLength: WireLimits.nameLength, "name")
        try WireRangeError.check(content.count, in: 0...WireLimits.surveyQuestions, "content")
        try WireRangeError.check(schedules.count, in: 0...WireLimits.surveySchedules, "schedules")
        // Each schedule entry checked its own ranges (Schedule.validate) while it was decoded.
    }
}

extension AdminWire.ClockRequest: RangeChecked {
    /// Throws the first field outside its range.
    public func checkRanges() throws(WireRangeError) {
        if let advanceSeconds { try WireRangeError.check(advanceSeconds, in: WireLimits.clockMoveSeconds, "advance_seconds") }
        if let freezeAt, let at = WireTime.parse(freezeAt) { try WireTime.checkYear(at, "freeze_at") }
    }
}

extension AdminWire.Intervention: RangeChecked {
    /// Throws the first field outside its range.
    public func checkRanges() throws(WireRangeError) {
        try WireRangeError.check(name, maxLength: WireLimits.nameLength, "name")
        if let date = LocalDate(date) { try WireRangeError.check(date.year, in: WireLimits.years, "date") }
    }
}

extension TelemetryPing: RangeChecked {
    /// Throws the first field outside its range.
    public func checkRanges() throws(WireRangeError) {
        try WireRangeError.check(pingInfo.seq, in: WireLimits.pingSeq, "ping_info.seq")
        try WireRangeError.check(events.count, in: 0...WireLimits.pingEvents, "events")
        if let clientID = clientInfo.clientID { try WireRangeError.check(clientID, maxLength: 200, "client_info.client_id") }
        // Required by Glean's pipeline schema (PROTOCOL.md §8); optional in the type so that pings an older SDK
        // queued on disk still decode there (it fills them in before sending).
        for (value, field) in [(clientInfo.architecture, "client_info.architecture"), (clientInfo.firstRunDate, "client_info.first_run_date")] {
            guard let value, !value.isEmpty else {
                throw WireRangeError(code: "missing_field", field: field, message: "'\(field)' is required (Glean's pipeline requires it)")
            }
            try WireRangeError.check(value, maxLength: 100, field)
        }
        if let metrics, metrics != .null, metrics.objectValue == nil {
            throw WireRangeError(code: "invalid_field", field: "metrics", message: "metrics must be an object")
        }
    }
}

extension WireTime {
    /// Throws `out_of_range` unless the instant's UTC year lies in ``WireLimits/years``.
    public static func checkYear(_ date: Date, _ field: String) throws(WireRangeError) {
        let year = LocalDate(daysSinceEpoch: Int((date.timeIntervalSince1970 / 86_400).rounded(.down))).year
        guard WireLimits.years.contains(year) else {
            throw WireRangeError(field: field, message: "\(field) must fall in the years \(WireLimits.years.lowerBound)-\(WireLimits.years.upperBound)")
        }
    }
}
