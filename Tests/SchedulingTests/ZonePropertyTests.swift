import Foundation
import Testing
@testable import Scheduling

/// Whole-year properties of weekly schedules in the spec's zones and in awkward ones, checked against
/// Foundation's calendar (an independent reading of the tz database):
/// - every occurrence is at its stated local wall-clock time, and at the first instant with that wall time
///   (fall-back overlap); or, when that time does not exist, at the first whole minute after the gap;
/// - every date with the weekday in the window has its occurrence; none is repeated.
@Suite struct ZonePropertyTests {
    static let zones = [
        "America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles", "America/Anchorage",
        "Pacific/Honolulu", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham", "Pacific/Apia",
    ]

    /// SplitMix64, so the schedules are the same on every run.
    struct Seeded {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    /// Times around every kind of transition (02:00 US, 02:45 Chatham, 00:00 Apia, half hours for Lord Howe) plus random ones.
    static func schedules(seed: UInt64) -> [Schedule] {
        var random = Seeded(state: seed)
        let fixed = [(0, 0), (1, 30), (2, 0), (2, 15), (2, 30), (2, 45), (3, 0), (3, 30), (9, 0), (23, 59)]
        var out: [Schedule] = []
        for (i, (h, m)) in fixed.enumerated() {
            out.append(.weekly(dayOfWeek: i % 7, time: LocalTime(hour: h, minute: m), from: nil, until: nil))
        }
        for _ in 0..<14 {
            out.append(.weekly(dayOfWeek: random.next(7), time: LocalTime(hour: random.next(24), minute: random.next(60)), from: nil, until: nil))
        }
        // Every day of the week at 02:30, which falls in a gap or an overlap in most DST zones once a year.
        for day in 0..<7 { out.append(.weekly(dayOfWeek: day, time: LocalTime(hour: 2, minute: 30), from: nil, until: nil)) }
        return out
    }

    struct Wall: Comparable {
        var date: LocalDate
        var seconds: Int
        static func < (a: Wall, b: Wall) -> Bool { (a.date, a.seconds) < (b.date, b.seconds) }
    }

    static func wall(_ instant: Date, _ zone: TimeZone) -> Wall {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: instant)
        return Wall(date: LocalDate(year: c.year!, month: c.month!, day: c.day!)!, seconds: c.hour! * 3600 + c.minute! * 60 + c.second!)
    }

    /// The property for one stated wall time and the instant chosen for it.
    static func holds(_ due: Date, for wanted: Wall, in zone: TimeZone) -> Bool {
        guard due.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) == 0 else { return false }
        let actual = wall(due, zone)
        if actual == wanted {
            // The first instant with that wall time: none 30 or 60 minutes earlier shows it too.
            return wall(due.addingTimeInterval(-1800), zone) != wanted && wall(due.addingTimeInterval(-3600), zone) != wanted
        }
        // A gap: just before the instant the clock was short of the wanted time, at the instant it is past it.
        return actual > wanted && wall(due.addingTimeInterval(-60), zone) < wanted
    }

    @Test(arguments: zones)
    func wholeYearOfWeeklySchedules(zoneID: String) {
        let zone = TimeZone(identifier: zoneID)!
        // Apia skipped 2011-12-30; the other zones are checked over 2026.
        let year = zoneID == "Pacific/Apia" ? 2011 : 2026
        let schedules = Self.schedules(seed: UInt64(abs(zoneID.hashValue % 1000)) &+ 17)
        let start = ZoneRules(zone).instant(LocalDate(year: year, month: 1, day: 1)!, LocalTime(hour: 0, minute: 0))
        let end = ZoneRules(zone).instant(LocalDate(year: year + 1, month: 1, day: 1)!, LocalTime(hour: 0, minute: 0))
        let context = ParticipantContext(timeZone: zone, registeredAt: start.addingTimeInterval(-86400))
        let occurrences = OccurrenceCalculator.occurrences(of: schedules, for: context, after: start, through: end)

        // No repeats.
        #expect(Set(occurrences.map(\.dueAt)).count == occurrences.count, "repeated instants in \(zoneID)")
        // Each occurrence is right for its stated wall time.
        for o in occurrences {
            let wanted = Wall(date: o.localDate, seconds: o.localTime.secondsOfDay)
            #expect(Self.holds(o.dueAt, for: wanted, in: zone), "\(zoneID) \(o.localTimestamp) → \(o.dueAt)")
        }
        // Every date of the year with the weekday has its occurrence (possibly shared by another entry at the same instant).
        // Only instants shown on the wanted date, or on the next (after a gap, up to Apia's whole skipped day), can hold
        // for it: the search is over those, not over the whole year's (which made this test hold both of the test
        // process's threads for about 9 s in a debug build, and every other test wait).
        let byDate = Dictionary(grouping: occurrences.map(\.dueAt)) { Self.wall($0, zone).date }
        var date = LocalDate(year: year, month: 1, day: 2)!
        let last = LocalDate(year: year, month: 12, day: 30)!
        var checked = 0
        while date <= last {
            for schedule in schedules {
                guard case .weekly(let day, let time, _, _) = schedule, day == date.dayOfWeek else { continue }
                let wanted = Wall(date: date, seconds: time.secondsOfDay)
                let candidates = (byDate[date] ?? []) + (byDate[date.adding(days: 1)] ?? [])
                #expect(candidates.contains { Self.holds($0, for: wanted, in: zone) }, "\(zoneID): nothing for \(date) \(time)")
                checked += 1
            }
            date = date.adding(days: 1)
        }
        #expect(checked > 1000)
    }

    @Test func apiaSkippedDayStillGetsItsSurvey() {
        let zone = TimeZone(identifier: "Pacific/Apia")!
        // 2011-12-30 was a Friday that never happened in Samoa.
        let friday: Schedule = .weekly(dayOfWeek: 5, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil)
        let context = ParticipantContext(timeZone: zone, registeredAt: Date(timeIntervalSince1970: 1_324_000_000))
        let all = OccurrenceCalculator.occurrences(of: [friday], for: context, after: Date(timeIntervalSince1970: 1_324_500_000),
                                                   through: Date(timeIntervalSince1970: 1_326_000_000))
        let dates = all.map(\.localDate.description)
        #expect(dates == ["2011-12-23", "2011-12-30", "2012-01-06"])
        // The skipped Friday fires at the first minute of Saturday 31 December (+14:00).
        #expect(Self.wall(all[1].dueAt, zone) == Wall(date: LocalDate("2011-12-31")!, seconds: 0))
    }
}
