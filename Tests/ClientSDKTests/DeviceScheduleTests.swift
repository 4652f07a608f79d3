import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// ``DeviceSchedule``: the device's own schedule of an old-style study.
@Suite struct DeviceScheduleTests {
    static let chicago = TimeZone(identifier: "America/Chicago")!

    static func at(_ text: String) -> Date { WireTime.parse(text)! }

    /// A survey due every day at 09:00 local time (Beiwe's `timings`: 7 lists, Sunday first, seconds after midnight).
    static func daily(_ id: String = "s1") -> SurveyEntry {
        SurveyEntry(id: id, name: "Mood", surveyType: "tracking_survey", content: [], settings: [:],
                    timings: Array(repeating: [9 * 3600], count: 7))
    }

    @Test func theListIsDownloadedFirstThenEveryFrequency() {
        let now = Self.at("2026-11-26T15:00:00Z")
        #expect(DeviceSchedule.tick(now: now, lastCheck: nil, frequencySeconds: 600) == .download)
        #expect(DeviceSchedule.tick(now: now, lastCheck: now.addingTimeInterval(-599), frequencySeconds: 600) == .evaluate)
        #expect(DeviceSchedule.tick(now: now, lastCheck: now.addingTimeInterval(-600), frequencySeconds: 600) == .download)
        // Without the server's frequency: hourly.
        #expect(DeviceSchedule.tick(now: now, lastCheck: now.addingTimeInterval(-3599), frequencySeconds: nil) == .evaluate)
        #expect(DeviceSchedule.tick(now: now, lastCheck: now.addingTimeInterval(-3600), frequencySeconds: nil) == .download)
    }

    @Test func anOccurrenceInTheWindowFiresOnceWithoutItsTimings() {
        // 08:00 to 10:00 in Chicago (UTC−6): the 09:00 occurrence.
        let fired = DeviceSchedule.due([Self.daily()], zone: Self.chicago, after: Self.at("2026-11-26T14:00:00Z"),
                                       through: Self.at("2026-11-26T16:00:00Z"), seen: [])
        #expect(fired.count == 1)
        #expect(fired.first?.uuids.count == 1)
        #expect(fired.first?.uuids.first?.hasPrefix("local-s1-2026-11-26T09:00") == true)
        #expect(fired.first?.entry.timings == nil && fired.first?.entry.id == "s1")
        #expect(fired.first?.sentTime == WireTime.beiweSentTime(Self.at("2026-11-26T15:00:00Z")))
    }

    @Test func theWindowIsOpenAtItsStartAndClosedAtItsEnd() {
        let nine = Self.at("2026-11-26T15:00:00Z")
        #expect(DeviceSchedule.due([Self.daily()], zone: Self.chicago, after: nine, through: nine.addingTimeInterval(60), seen: []).isEmpty)
        #expect(DeviceSchedule.due([Self.daily()], zone: Self.chicago, after: nine.addingTimeInterval(-60), through: nine, seen: []).count == 1)
    }

    @Test func anOccurrenceShownBeforeDoesNotFireAgain() {
        let window = (Self.at("2026-11-26T14:00:00Z"), Self.at("2026-11-26T16:00:00Z"))
        let first = DeviceSchedule.due([Self.daily()], zone: Self.chicago, after: window.0, through: window.1, seen: [])
        let again = DeviceSchedule.due([Self.daily()], zone: Self.chicago, after: window.0, through: window.1, seen: Set(first.flatMap(\.uuids)))
        #expect(!first.isEmpty && again.isEmpty)
    }

    @Test func aLongWindowFiresEveryOccurrenceInOneFiringDatedByTheLast() {
        // Two days offline: both 09:00 occurrences, one stored survey, sent_time of the second.
        let fired = DeviceSchedule.due([Self.daily(), Self.daily("s2")], zone: Self.chicago, after: Self.at("2026-11-25T14:00:00Z"),
                                       through: Self.at("2026-11-26T16:00:00Z"), seen: [])
        #expect(fired.map(\.entry.id) == ["s1", "s2"])
        #expect(fired.first?.uuids.count == 2)
        #expect(fired.first?.sentTime == WireTime.beiweSentTime(Self.at("2026-11-26T15:00:00Z")))
    }

    @Test func aClockThatWentBackAndASurveyWithoutTimingsFireNothing() {
        #expect(DeviceSchedule.due([Self.daily()], zone: Self.chicago, after: Self.at("2026-11-26T16:00:00Z"),
                                   through: Self.at("2026-11-26T14:00:00Z"), seen: []).isEmpty)
        var none = Self.daily()
        none.timings = nil
        #expect(DeviceSchedule.due([none], zone: Self.chicago, after: Self.at("2026-11-26T14:00:00Z"),
                                   through: Self.at("2026-11-26T16:00:00Z"), seen: []).isEmpty)
    }

    @Test func theZoneDecidesTheInstant() {
        // 09:00 in Tokyo is 00:00 UTC: nothing in Chicago's morning window.
        #expect(DeviceSchedule.due([Self.daily()], zone: TimeZone(identifier: "Asia/Tokyo")!, after: Self.at("2026-11-26T14:00:00Z"),
                                   through: Self.at("2026-11-26T16:00:00Z"), seen: []).isEmpty)
    }
}
