import Foundation
import Testing
@testable import ServerSupport

@Suite struct ListingQueryTests {
    @Test func durationsAndCounts() throws {
        #expect(ListingQuery.duration("250ms") == .milliseconds(250))
        #expect(ListingQuery.duration("1.5s") == .milliseconds(1500))
        #expect(ListingQuery.duration("1m") == .seconds(60))
        #expect(ListingQuery.duration("2") == .seconds(2))
        #expect(ListingQuery.duration("soon") == nil && ListingQuery.duration("5h") == nil)
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
