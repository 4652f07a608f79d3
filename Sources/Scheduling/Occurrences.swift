import Foundation

/// What the scheduler knows about one participant.
public struct ParticipantContext: Sendable {
    /// The zone fixed at registration.
    public var timeZone: TimeZone
    /// When the participant registered; nothing before it is scheduled.
    public var registeredAt: Date
    /// Intervention dates by name, the anchors of relative schedules.
    public var interventions: [String: LocalDate]

    public init(timeZone: TimeZone, registeredAt: Date, interventions: [String: LocalDate] = [:]) {
        self.timeZone = timeZone
        self.registeredAt = registeredAt
        self.interventions = interventions
    }
}

/// One time a survey falls due for a participant.
public struct Occurrence: Sendable, Hashable {
    /// Index of the schedule entry (the first, when several land on the same minute).
    public var scheduleIndex: Int
    /// The local wall-clock date and time the schedule names (before gap resolution).
    public var localDate: LocalDate
    public var localTime: LocalTime
    /// The instant it is due.
    public var dueAt: Date

    public init(scheduleIndex: Int, localDate: LocalDate, localTime: LocalTime, dueAt: Date) {
        self.scheduleIndex = scheduleIndex
        self.localDate = localDate
        self.localTime = localTime
        self.dueAt = dueAt
    }

    /// `YYYY-MM-DDTHH:MM` of the local wall-clock time.
    public var localTimestamp: String { "\(localDate)T\(localTime)" }
}

/// Computes occurrences of a survey's schedules. Pure: time, zone and anchors are passed in.
public enum OccurrenceCalculator {
    /// Every occurrence due in `(after, through]` and not before registration, sorted by due time.
    /// Two entries due at the same instant give one occurrence (the lower schedule index).
    public static func occurrences(
        of schedules: [Schedule], for participant: ParticipantContext, after start: Date, through end: Date
    ) -> [Occurrence] {
        let lower = max(start, participant.registeredAt.addingTimeInterval(-0.001))
        guard end > lower else { return [] }
        let zone = ZoneRules(participant.timeZone)
        let registrationDay = zone.local(participant.registeredAt).date
        // Local dates that can hold an instant in the window (zones are within ±14 h, gaps ≤ 24 h).
        let firstDay = zone.local(lower).date.adding(days: -2)
        let lastDay = zone.local(end).date.adding(days: 1)

        var byInstant: [Int64: Occurrence] = [:]
        func consider(_ index: Int, _ date: LocalDate, _ time: LocalTime) {
            let t = zone.epochSeconds(date, time)
            let due = Date(timeIntervalSince1970: TimeInterval(t))
            guard due > lower, due <= end else { return }
            if let existing = byInstant[t], existing.scheduleIndex <= index { return }
            byInstant[t] = Occurrence(scheduleIndex: index, localDate: date, localTime: time, dueAt: due)
        }
        func resolve(_ bound: Schedule.DateBound?) -> LocalDate? {
            switch bound {
            case .none: nil
            case .date(let d): d
            case .daysAfterRegistration(let n): registrationDay.adding(days: n)
            }
        }

        for (index, schedule) in schedules.enumerated() {
            switch schedule {
            case .weekly(let dayOfWeek, let time, let from, let until):
                var day = max(firstDay, resolve(from) ?? firstDay)
                let stop = min(lastDay, resolve(until) ?? lastDay)
                let shift = (dayOfWeek - day.dayOfWeek + 7) % 7
                day = day.adding(days: shift)
                while day <= stop {
                    consider(index, day, time)
                    day = day.adding(days: 7)
                }
            case .absolute(let date, let time):
                if date >= firstDay, date <= lastDay { consider(index, date, time) }
            case .relative(let daysAfter, let time, let anchor):
                let base: LocalDate?
                switch anchor {
                case .registration: base = registrationDay
                case .intervention(let name): base = participant.interventions[name]
                }
                if let date = base?.adding(days: daysAfter), date >= firstDay, date <= lastDay { consider(index, date, time) }
            }
        }
        return byInstant.values.sorted { $0.dueAt < $1.dueAt }
    }

    /// Beiwe's `timings` for one participant: the weekly entries, plus the absolute and relative occurrences that fall
    /// in Beiwe's moving window of local days `[today − 4, today + 3)`, each mapped to (day of week, seconds after
    /// local midnight) — how Beiwe lets a phone-side scheduler show non-weekly surveys.
    public static func timings(of schedules: [Schedule], for participant: ParticipantContext, around now: Date) -> [[Int]] {
        var days = weeklyTimings(of: schedules).map(Set.init)
        let zone = ZoneRules(participant.timeZone)
        let today = zone.local(now).date
        let windowStart = zone.instant(today.adding(days: -4), LocalTime(hour: 0, minute: 0)).addingTimeInterval(-1)
        let windowEnd = zone.instant(today.adding(days: 3), LocalTime(hour: 0, minute: 0)).addingTimeInterval(-1)
        let oneOff = schedules.filter { if case .weekly = $0 { false } else { true } }
        for o in occurrences(of: oneOff, for: participant, after: windowStart, through: windowEnd) {
            days[o.localDate.dayOfWeek].insert(o.localTime.secondsOfDay)
        }
        return days.map { $0.sorted() }
    }

    /// Weekly schedules rebuilt from Beiwe `timings` (what a device scheduler works from).
    public static func weeklySchedules(fromTimings timings: [[Int]]) -> [Schedule] {
        var out: [Schedule] = []
        for (day, seconds) in timings.prefix(7).enumerated() {
            for s in Set(seconds).sorted() where (0..<86400).contains(s) {
                out.append(.weekly(dayOfWeek: day, time: LocalTime(hour: s / 3600, minute: (s % 3600) / 60), from: nil, until: nil))
            }
        }
        return out
    }

    /// Beiwe's `timings` for old-style studies: 7 lists (index 0 = Sunday) of seconds after local midnight,
    /// sorted and without duplicates, from the weekly entries.
    public static func weeklyTimings(of schedules: [Schedule]) -> [[Int]] {
        var days = Array(repeating: Set<Int>(), count: 7)
        for case .weekly(let day, let time, _, _) in schedules where (0...6).contains(day) {
            days[day].insert(time.secondsOfDay)
        }
        return days.map { $0.sorted() }
    }
}
