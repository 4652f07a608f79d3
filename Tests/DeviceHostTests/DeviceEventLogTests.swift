import SurveyWire
import Testing
@testable import DeviceHost

@Suite struct DeviceEventLogTests {
    static func log(_ names: [String]) -> DeviceEventLog {
        var log = DeviceEventLog()
        for name in names { log.append(["event": .string(name)]) }
        return log
    }

    @Test func eventsAreNumberedFromOneAndPagedAfterASeq() {
        let log = Self.log(["registered", "push_received", "survey_available", "submitted"])
        #expect(log.lastSeq == 4)
        let all = log.page(after: 0)
        #expect(all.events.compactMap { $0["seq"]?.numberValue } == [1, 2, 3, 4])
        #expect(all.next == 4 && all.satisfied)
        let rest = log.page(after: 2)
        #expect(rest.events.compactMap { $0["event"]?.stringValue } == ["survey_available", "submitted"])
        let none = log.page(after: 4)
        #expect(none.events.isEmpty && none.next == 4 && !none.satisfied)
        // Asked past the end: the seq comes back as it was given.
        #expect(log.page(after: 99).next == 99)
    }

    @Test func untilStopsAtTheFirstMatchAndIsUnsatisfiedWithoutOne() {
        let log = Self.log(["registered", "push_received", "survey_available", "push_received", "survey_available"])
        let page = log.page(after: 0, until: "survey_available")
        #expect(page.events.count == 3 && page.next == 3 && page.satisfied)
        let second = log.page(after: page.next, until: "survey_available")
        #expect(second.events.count == 2 && second.next == 5 && second.satisfied)
        let missing = log.page(after: 0, until: "submitted")
        #expect(missing.events.count == 5 && !missing.satisfied)
    }

    @Test func theOldestGoPastTheCapacityAndALateReaderGetsWhatIsLeft() {
        var log = DeviceEventLog()
        for n in 0..<(DeviceEventLog.capacity + 10) { log.append(["event": "push_received", "n": .number(Double(n))]) }
        #expect(log.events.count == DeviceEventLog.capacity)
        let page = log.page(after: 0)
        #expect(page.events.first?["seq"]?.numberValue == 11)
        #expect(page.events.count == DeviceEventLog.pageLimit)
        #expect(page.next == 10 + DeviceEventLog.pageLimit)
    }
}
