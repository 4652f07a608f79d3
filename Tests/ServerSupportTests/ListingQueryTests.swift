import Foundation
import SurveyWire
import Testing
@testable import ServerSupport

@Suite struct ListingQueryTests {
    @Test func durationsAndCounts() throws {
        let any = Duration.zero...Duration.seconds(3600)
        #expect(QueryValue.duration("250ms", in: any) == .milliseconds(250))
        #expect(QueryValue.duration("1.5s", in: any) == .milliseconds(1500))
        #expect(QueryValue.duration("1m", in: any) == .seconds(60))
        #expect(QueryValue.duration("2", in: any) == .seconds(2))
        #expect(QueryValue.duration("soon", in: any) == nil && QueryValue.duration("5h", in: any) == nil)
        let query = try ListingQuery(pairs: [("patient_id", "p"), ("wait", "5s"), ("min_count", "3")], allowed: ["patient_id"])
        #expect(query["patient_id"] == "p" && query.wait == .seconds(5) && query.minCount == 3)
        let plain = try ListingQuery(pairs: [], allowed: [])
        #expect(plain.wait == nil && plain.minCount == 1)
    }

    @Test func refusesWhatTheListingDoesNotTake() {
        #expect(throws: APIError.self) { try ListingQuery(pairs: [("patient", "p")], allowed: ["patient_id"]) }
        #expect(throws: APIError.self) { try ListingQuery(pairs: [("wait", "61s")], allowed: []) }
        #expect(throws: APIError.self) { try ListingQuery(pairs: [("wait", "-1s")], allowed: []) }
        #expect(throws: APIError.self) { try ListingQuery(pairs: [("min_count", "0")], allowed: []) }
    }

    /// Issue 49: these values crashed the mock server ("Double value cannot be converted to Int64") and the devices
    /// API (an overflow past `after`); each is a 400 `invalid_field` now, never a trap.
    @Test func valuesOutsideTheirRangesAreRefusedNotTrapped() throws {
        for wait in ["1e308", "99999999999999999999", "1e20ms", "-1e308m", "nan", "inf", String(repeating: "9", count: 5000)] {
            #expect(throws: APIError.self, "\(wait)") { try ListingQuery(pairs: [("wait", wait)], allowed: []) }
        }
        for count in ["99999999999999999999", "-9223372036854775808", "1e3", "0x10"] {
            #expect(throws: APIError.self, "\(count)") { try ListingQuery(pairs: [("min_count", count)], allowed: []) }
        }
        let query = try ListingQuery(pairs: [("after", "9223372036854775807")], allowed: ["after"])
        #expect(throws: APIError.self) { try query.integer("after", in: 0...(1 << 53)) }
        #expect(try ListingQuery(pairs: [("after", "12")], allowed: ["after"]).integer("after", in: 0...(1 << 53)) == 12)
        #expect(QueryValue.duration("60s", in: .zero...Duration.seconds(60)) == .seconds(60))
        #expect(QueryValue.duration("60.001s", in: .zero...Duration.seconds(60)) == nil)
    }

    /// A change wakes the wait (the recheck is longer than the wait here, so only a change can end it early); without one
    /// it ends at `wait` with what there is. The bound is loose: this runs beside the integration suite on 2 cores.
    @Test func aChangeWakesTheWaitAndTheDeadlineEndsIt() async throws {
        let changes = ObservedValue<UInt64>(0)
        let items = ObservedValue<[Int]>([])
        let query = try ListingQuery(pairs: [("wait", "60s"), ("min_count", "2")], allowed: [])
        let started = ContinuousClock.now
        let waiting = Task { try await query.answer(changes: changes, recheck: .seconds(120)) { items.value } }
        try await Task.sleep(for: .milliseconds(50))
        items.update { $0 = [1] }
        changes.update { $0 += 1 }
        try await Task.sleep(for: .milliseconds(50))
        items.update { $0 = [1, 2] }
        changes.update { $0 += 1 }
        #expect(try await waiting.value == [1, 2])
        #expect(ContinuousClock.now - started < .seconds(50), "only the deadline ended the wait")
        let short = try ListingQuery(pairs: [("wait", "200ms"), ("min_count", "5")], allowed: [])
        let begun = ContinuousClock.now
        #expect(try await short.answer(changes: changes) { items.value } == [1, 2])
        #expect(ContinuousClock.now - begun >= .milliseconds(200))
    }
}
