import Foundation
import Testing
@testable import Scheduling

func utc(_ text: String) -> Date {
    let d = text.split(whereSeparator: { "-T:Z".contains($0) }).map { Int($0)! }
    let date = LocalDate(year: d[0], month: d[1], day: d[2])!
    return Date(timeIntervalSince1970: TimeInterval(date.daysSinceEpoch * 86400 + d[3] * 3600 + d[4] * 60 + (d.count > 5 ? d[5] : 0)))
}

func zone(_ id: String) -> TimeZone { TimeZone(identifier: id)! }

@Suite struct LocalDateTests {
    @Test func weekdaysUseSundayZero() {
        #expect(LocalDate("2026-05-04")!.dayOfWeek == 1)  // Monday
        #expect(LocalDate("2017-05-05")!.dayOfWeek == 5)  // Friday
        #expect(LocalDate("1970-01-01")!.dayOfWeek == 4)
        #expect(LocalDate("1969-12-28")!.dayOfWeek == 0)
    }

    @Test func rejectsImpossibleDates() {
        #expect(LocalDate("2026-02-29") == nil)
        #expect(LocalDate("2024-02-29") != nil)
        #expect(LocalDate("2026-13-01") == nil)
        #expect(LocalDate("2026-1-01") == nil)
        #expect(LocalDate("20x6-01-01") == nil)
    }

    @Test func daysRoundTrip() {
        for days in stride(from: -800_000, through: 800_000, by: 997) {
            #expect(LocalDate(daysSinceEpoch: days).daysSinceEpoch == days)
        }
    }
}

@Suite struct ZoneRuleTests {
    @Test func springForwardGapResolvesToFirstMinuteAfter() {
        let ny = ZoneRules(zone("America/New_York"))
        // 2026-03-08 02:30 does not exist in New York; 03:00 EDT is 07:00Z.
        #expect(ny.instant(LocalDate("2026-03-08")!, LocalTime(hour: 2, minute: 30)) == utc("2026-03-08T07:00:00Z"))
        #expect(ny.instant(LocalDate("2026-03-08")!, LocalTime(hour: 3, minute: 0)) == utc("2026-03-08T07:00:00Z"))
        #expect(ny.instant(LocalDate("2026-03-08")!, LocalTime(hour: 1, minute: 59)) == utc("2026-03-08T06:59:00Z"))
    }

    @Test func fallBackOverlapResolvesToFirstOccurrence() {
        let ny = ZoneRules(zone("America/New_York"))
        // 2026-11-01 01:30 happens at 05:30Z (EDT) and 06:30Z (EST); the first one wins.
        #expect(ny.instant(LocalDate("2026-11-01")!, LocalTime(hour: 1, minute: 30)) == utc("2026-11-01T05:30:00Z"))
    }

    @Test func lordHoweHalfHourShift() {
        let lh = ZoneRules(zone("Australia/Lord_Howe"))
        // 2026-10-04 02:00 → 02:30 local; 02:15 is in the gap → 02:30 (+11:00) = 15:30Z the previous day.
        #expect(lh.instant(LocalDate("2026-10-04")!, LocalTime(hour: 2, minute: 15)) == utc("2026-10-03T15:30:00Z"))
    }

    @Test func apiaSkippedDayMapsToTheNextValidMinute() {
        let apia = ZoneRules(zone("Pacific/Apia"))
        // 2011-12-30 did not exist in Samoa: the clock went from 29 Dec 23:59:59 (-10) to 31 Dec 00:00 (+14).
        #expect(apia.instant(LocalDate("2011-12-30")!, LocalTime(hour: 9, minute: 0)) == utc("2011-12-30T10:00:00Z"))
    }

    @Test func localOfInstant() {
        let k = ZoneRules(zone("Asia/Kathmandu"))
        let (date, seconds) = k.local(utc("2026-01-01T00:00:00Z"))
        #expect(date == LocalDate("2026-01-01")!)
        #expect(seconds == 5 * 3600 + 45 * 60)
    }
}

@Suite struct OccurrenceTests {
    let monday9: Schedule = .weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil)

    @Test func weeklyIsAtLocalWallClockAcrossDST() {
        let ctx = ParticipantContext(timeZone: zone("America/Chicago"), registeredAt: utc("2026-01-01T00:00:00Z"))
        let all = OccurrenceCalculator.occurrences(of: [monday9], for: ctx, after: utc("2026-01-01T00:00:00Z"), through: utc("2027-01-01T00:00:00Z"))
        #expect(all.count == 52)
        let rules = ZoneRules(zone("America/Chicago"))
        for o in all {
            let (date, seconds) = rules.local(o.dueAt)
            #expect(date.dayOfWeek == 1)
            #expect(seconds == 9 * 3600)
        }
        #expect(all.first?.dueAt == utc("2026-01-05T15:00:00Z"))  // CST
        #expect(all.contains { $0.dueAt == utc("2026-05-04T14:00:00Z") })  // CDT
    }

    @Test func specExampleDateRangeIsInclusive() {
        // Mon/Wed/Fri 09:45 limited to 2017-05-05..2017-05-15.
        let bounds = (Schedule.DateBound.date(LocalDate("2017-05-05")!), Schedule.DateBound.date(LocalDate("2017-05-15")!))
        let schedules = [1, 3, 5].map { Schedule.weekly(dayOfWeek: $0, time: LocalTime(hour: 9, minute: 45), from: bounds.0, until: bounds.1) }
        let ctx = ParticipantContext(timeZone: zone("America/New_York"), registeredAt: utc("2017-04-01T00:00:00Z"))
        let dates = OccurrenceCalculator.occurrences(of: schedules, for: ctx, after: utc("2017-04-01T00:00:00Z"), through: utc("2017-06-01T00:00:00Z"))
            .map(\.localDate.description)
        #expect(!dates.contains("2017-05-03"))
        #expect(dates == ["2017-05-05", "2017-05-08", "2017-05-10", "2017-05-12", "2017-05-15"])
    }

    @Test func nothingBeforeRegistrationAndSameMinuteIsOneOccurrence() {
        let ctx = ParticipantContext(timeZone: zone("America/Chicago"), registeredAt: utc("2026-05-04T14:30:00Z"))
        let twice = [monday9, .absolute(date: LocalDate("2026-05-11")!, time: LocalTime(hour: 9, minute: 0))]
        let all = OccurrenceCalculator.occurrences(of: twice, for: ctx, after: utc("2026-05-01T00:00:00Z"), through: utc("2026-05-20T00:00:00Z"))
        #expect(all.map(\.dueAt) == [utc("2026-05-11T14:00:00Z"), utc("2026-05-18T14:00:00Z")])
        #expect(all[0].scheduleIndex == 0)
    }

    @Test func relativeNeedsItsAnchor() {
        let ctx = ParticipantContext(timeZone: zone("UTC"), registeredAt: utc("2026-05-04T10:00:00Z"),
                                     interventions: ["surgery": LocalDate("2026-05-10")!])
        let schedules: [Schedule] = [
            .relative(daysAfter: 2, time: LocalTime(hour: 8, minute: 0), anchor: .registration),
            .relative(daysAfter: 1, time: LocalTime(hour: 8, minute: 0), anchor: .intervention("surgery")),
            .relative(daysAfter: 1, time: LocalTime(hour: 8, minute: 0), anchor: .intervention("missing")),
        ]
        let all = OccurrenceCalculator.occurrences(of: schedules, for: ctx, after: utc("2026-05-01T00:00:00Z"), through: utc("2026-06-01T00:00:00Z"))
        #expect(all.map(\.dueAt) == [utc("2026-05-06T08:00:00Z"), utc("2026-05-11T08:00:00Z")])
    }

    @Test func timingsAreSundayFirstSortedAndUnique() {
        let schedules: [Schedule] = [
            .weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil),
            .weekly(dayOfWeek: 1, time: LocalTime(hour: 8, minute: 30), from: nil, until: nil),
            .weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil),
            .weekly(dayOfWeek: 0, time: LocalTime(hour: 0, minute: 1), from: nil, until: nil),
        ]
        #expect(OccurrenceCalculator.weeklyTimings(of: schedules) == [[60], [30600, 32400], [], [], [], [], []])
    }
}

@Suite struct ScheduleCodingTests {
    @Test func decodesTheWireShapes() throws {
        let json = """
        [{"type": "weekly", "day_of_week": 1, "hour": 13, "minute": 23, "from": "2017-05-05", "until": {"day": 25}},
         {"type": "absolute", "date": "2017-05-01", "hour": 17, "minute": 16},
         {"type": "relative", "days_after": 21, "hour": 17, "minute": 16, "anchor": {"intervention": "x"}}]
        """
        let schedules = try JSONDecoder().decode([Schedule].self, from: Data(json.utf8))
        #expect(schedules[0] == .weekly(dayOfWeek: 1, time: LocalTime(hour: 13, minute: 23), from: .date(LocalDate("2017-05-05")!), until: .daysAfterRegistration(25)))
        let again = try JSONDecoder().decode([Schedule].self, from: JSONEncoder().encode(schedules))
        #expect(again == schedules)
    }

    @Test(arguments: [
        (#"{"type": "weekly", "day_of_week": 7, "hour": 1, "minute": 0}"#, "day_of_week"),
        (#"{"type": "weekly", "day_of_week": 1, "hour": 24, "minute": 0}"#, "hour"),
        (#"{"type": "weekly", "day_of_week": 1, "hour": 1, "minute": 60}"#, "minute"),
        (#"{"type": "absolute", "date": "2017-02-30", "hour": 1, "minute": 0}"#, "date"),
        (#"{"type": "weekly", "day_of_week": 1, "hour": 1, "minute": 0, "from": "2017-05-05", "until": "2017-05-01"}"#, "until"),
        (#"{"type": "weekly", "day_of_week": 1, "hour": 1, "minute": 0, "colour": "red"}"#, "colour"),
        (#"{"type": "relative", "days_after": -1, "hour": 1, "minute": 0}"#, "days_after"),
        (#"{"type": "monthly", "hour": 1, "minute": 0}"#, "type"),
    ])
    func rejectsBadSchedulesNamingTheField(json: String, field: String) {
        do {
            _ = try JSONDecoder().decode(Schedule.self, from: Data(json.utf8))
            Issue.record("decoded \(json)")
        } catch let error as ScheduleError {
            #expect(error.field == field)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite struct TimingsTests {
    @Test func movingWindowAddsNearbyOneOffOccurrences() {
        let ctx = ParticipantContext(timeZone: zone("America/Chicago"), registeredAt: utc("2026-04-01T00:00:00Z"),
                                     interventions: ["visit": LocalDate("2026-05-01")!])
        let schedules: [Schedule] = [
            .weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil),
            .absolute(date: LocalDate("2026-05-06")!, time: LocalTime(hour: 17, minute: 15)),   // Wednesday, in the window
            .absolute(date: LocalDate("2026-06-01")!, time: LocalTime(hour: 8, minute: 0)),     // far away
            .relative(daysAfter: 1, time: LocalTime(hour: 7, minute: 0), anchor: .intervention("visit")),  // Saturday 05-02
        ]
        // "Today" is Monday 2026-05-04 in Chicago: the window is Thursday 04-30 .. Wednesday 05-06.
        let timings = OccurrenceCalculator.timings(of: schedules, for: ctx, around: utc("2026-05-04T15:00:00Z"))
        #expect(timings == [[], [32400], [], [62100], [], [], [25200]])
    }

    @Test func timingsRoundTripToWeeklySchedules() {
        let timings = [[60], [30600, 32400], [], [], [], [], [86340]]
        #expect(OccurrenceCalculator.weeklyTimings(of: OccurrenceCalculator.weeklySchedules(fromTimings: timings)) == timings)
    }
}
