import Foundation
import Testing
@testable import Messaging
import SurveyWire

/// Seconds since 1970 of a UTC time written `2026-11-22T18:00:00Z`.
func utc(_ text: String) -> Date {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime]
    return f.date(from: text)!
}

@Suite struct EventStoreTests {
    @Test func countersStartAtJanuaryFirstUTCWithNimbusBucketCounts() {
        var store = EventStore()
        store.record("app_cycle.foreground", at: utc("2026-01-01T10:30:00Z"))
        let counter = store.events["app_cycle.foreground"]!
        #expect(counter["Days"]!.start == Int64(utc("2026-01-01T00:00:00Z").timeIntervalSince1970))
        #expect(counter["Days"]!.buckets == [1])
        #expect(counter["Hours"]!.buckets.count == 11)  // 10 whole hours since Jan 1 pushed 10 empty buckets
        #expect(counter["Years"]!.buckets == [1])
        #expect(EventInterval.allCases.map(\.bucketCount) == [60, 72, 56, 52, 12, 4])
        // Late in the year a new day counter is full length at once: 325 days rotate past its 56 buckets.
        var late = EventStore()
        late.record("e", at: utc("2026-11-22T18:00:00Z"))
        #expect(late.events["e"]!["Days"]!.buckets.count == 56)
        #expect(late.events["e"]!["Days"]!.start == Int64(utc("2026-11-22T00:00:00Z").timeIntervalSince1970))
    }

    @Test func weeksStartOnTheWeekdayOfJanuaryFirstAndMonthsAre28Days() {
        var store = EventStore()
        // 2026-01-01 is a Thursday: the week bucket turns over on Thursdays, not Mondays.
        store.record("e", at: utc("2026-01-07T12:00:00Z"))  // Wednesday, week 0
        store.record("e", at: utc("2026-01-08T01:00:00Z"))  // Thursday, week 1
        let now = utc("2026-01-08T02:00:00Z")
        #expect(store.query("e", interval: .weeks, count: 1, start: 0, kind: .sum, at: now) == 1)
        #expect(store.query("e", interval: .weeks, count: 1, start: 1, kind: .sum, at: now) == 1)
        // Day 28 after Jan 1 (Jan 29) is the second "month".
        store.record("m", at: utc("2026-01-28T23:00:00Z"))
        store.record("m", at: utc("2026-01-29T01:00:00Z"))
        #expect(store.query("m", interval: .months, count: 1, start: 0, kind: .sum, at: utc("2026-01-29T02:00:00Z")) == 1)
        #expect(store.query("m", interval: .months, count: 2, start: 0, kind: .sum, at: utc("2026-01-29T02:00:00Z")) == 2)
    }

    @Test func queriesFollowNimbus() {
        var store = EventStore()
        let day = 86_400.0
        let start = utc("2026-03-01T12:00:00Z")
        // Days 0, 2 and 3 before "now" have 1, 2 and 3 events.
        store.record("e", count: 3, at: start)
        store.record("e", count: 2, at: start.addingTimeInterval(day))
        store.record("e", count: 1, at: start.addingTimeInterval(3 * day))
        let now = start.addingTimeInterval(3 * day + 60)
        #expect(store.query("e", interval: .days, count: 4, start: 0, kind: .sum, at: now) == 6)
        #expect(store.query("e", interval: .days, count: 4, start: 0, kind: .countNonZero, at: now) == 3)
        #expect(store.query("e", interval: .days, count: 4, start: 0, kind: .averagePerInterval, at: now) == 1.5)
        #expect(store.query("e", interval: .days, count: 4, start: 0, kind: .averagePerNonZeroInterval, at: now) == 2)
        #expect(store.query("e", interval: .days, count: 1, start: 0, kind: .lastSeen, at: now) == 0)
        #expect(store.query("e", interval: .days, count: .max, start: 1, kind: .lastSeen, at: now) == 1)
        // Out of range start → the error values.
        #expect(store.query("e", interval: .years, count: 1, start: 1, kind: .sum, at: now) == 0)
        #expect(store.query("e", interval: .years, count: 1, start: 1, kind: .lastSeen, at: now) == Double.greatestFiniteMagnitude)
        #expect(store.query("unknown", interval: .days, count: 1, start: 0, kind: .averagePerInterval, at: now) == 0)
        // Querying does not change the store.
        let before = store
        _ = store.query("e", interval: .days, count: 1, start: 0, kind: .sum, at: now.addingTimeInterval(30 * day))
        #expect(store == before)
    }

    /// Bug B4: the clock jumps. Forward: buckets rotate. Backward: nothing rotates, no negative index, and events land
    /// in the current bucket until real time catches up.
    @Test func clockJumpsForwardRotateAndBackwardChangeNothing() {
        var store = EventStore()
        let t0 = utc("2026-06-10T12:00:00Z")
        store.record("homepage_viewed", at: t0)
        #expect(store.query("homepage_viewed", interval: .minutes, count: 1, start: 0, kind: .lastSeen, at: t0) == 0)
        // +24 h: the view is now 1 day (1440 minutes, beyond 60 buckets) ago.
        let later = t0.addingTimeInterval(86_400)
        #expect(store.query("homepage_viewed", interval: .days, count: .max, start: 0, kind: .lastSeen, at: later) == 1)
        #expect(store.query("homepage_viewed", interval: .minutes, count: .max, start: 0, kind: .lastSeen, at: later) == Double.greatestFiniteMagnitude)
        #expect(store.query("homepage_viewed", interval: .hours, count: .max, start: 0, kind: .lastSeen, at: later) == 24)
        // Backward by a day: no rotation, the count stays in bucket 0, nothing negative.
        let earlier = t0.addingTimeInterval(-86_400)
        store.record("homepage_viewed", at: earlier)
        #expect(store.query("homepage_viewed", interval: .days, count: 1, start: 0, kind: .sum, at: earlier) == 2)
        #expect(store.query("homepage_viewed", interval: .days, count: 56, start: 0, kind: .sum, at: earlier) == 2)
        #expect(store.events["homepage_viewed"]!["Days"]!.start == Int64(utc("2026-06-10T00:00:00Z").timeIntervalSince1970))
    }

    /// Bug B1: a view that reports itself twice counts once when the caller passes the view's id.
    @Test func repeatsFromOneViewCountOnce() {
        var store = EventStore()
        let t = utc("2026-06-10T12:00:00Z")
        let first = store.record("homepage_viewed", viewID: "view-1", at: t)
        let repeated = store.record("homepage_viewed", viewID: "view-1", at: t.addingTimeInterval(0.3))
        #expect(first && !repeated)
        #expect(store.query("homepage_viewed", interval: .years, count: 4, start: 0, kind: .sum, at: t) == 1)
        let second = store.record("homepage_viewed", viewID: "view-2", at: t.addingTimeInterval(5))
        #expect(second)
        #expect(store.query("homepage_viewed", interval: .years, count: 4, start: 0, kind: .sum, at: t.addingTimeInterval(5)) == 2)
        // Without a view id every call counts.
        store.record("performed_search", at: t)
        store.record("performed_search", at: t)
        #expect(store.query("performed_search", interval: .days, count: 1, start: 0, kind: .sum, at: t) == 2)
    }

    @Test func pastEventsLandInTheirBuckets() throws {
        var store = EventStore()
        let now = utc("2026-06-10T12:00:00Z")
        try store.recordPast("e", secondsAgo: 3 * 86_400, at: now)
        #expect(store.query("e", interval: .days, count: .max, start: 0, kind: .lastSeen, at: now) == 3)
        #expect(store.query("e", interval: .days, count: 7, start: 0, kind: .sum, at: now) == 1)
    }

    @Test func theStoreRoundTripsThroughJSON() throws {
        var store = EventStore()
        store.record("a", count: 5, viewID: "v", at: utc("2026-06-10T12:00:00Z"))
        let data = try JSONEncoder().encode(store)
        #expect(try JSONDecoder().decode(EventStore.self, from: data) == store)
    }

    @Test func triggersOverTheStore() throws {
        var store = EventStore()
        let t = utc("2026-06-10T12:00:00Z")
        store.record("homepage_viewed", viewID: "1", at: t)
        let once = TargetingHelper(context: [:], events: store, now: t)
        #expect(try once.evaluate("'homepage_viewed'|eventSum('Years', 4, 0) >= 2") == false)
        store.record("homepage_viewed", viewID: "2", at: t.addingTimeInterval(60))
        let twice = TargetingHelper(context: [:], events: store, now: t.addingTimeInterval(61))
        #expect(try twice.evaluate("'homepage_viewed'|eventSum('Years', 4, 0) >= 2"))
        // NOT_LAUNCHED_YESTERDAY over a counter with no launch before today.
        #expect(try twice.evaluate("'app_cycle.foreground'|eventLastSeen('Days', 1) > 1"))
    }
}

@Suite struct SamplingTests {
    @Test func truncatedHashesMatchNimbus() {
        func hex(_ v: UInt64) -> String { String(v, radix: 16).leftPadded(to: 12) }
        #expect(hex(Sampling.truncatedHash([1234, "test_namespace"])) == "2a6e18a86edc")
        #expect(hex(Sampling.truncatedHash(.null)) == "74234e98afe7")
        #expect(hex(Sampling.truncatedHash(""))  == "12ae32cb1ec0")
        #expect(hex(Sampling.truncatedHash(["id": 1234, "namespace": "experiment"])) == "5d1effd4b032")
    }

    @Test func bucketAndRatioSamplesMatchNimbus() {
        let slug = "bug-1637316-message-aboutwelcome-pull-factor-reinforcement-76-rel-release-76-77"
        let first: JSONValue = ["299eed1e-be6d-457d-9e53-da7b1a03f10d", .string(slug)]
        #expect(Sampling.bucketSample(first, start: 0, count: 2000, total: 10000))
        #expect(!Sampling.bucketSample(first, start: 2000, count: 3000, total: 10000))
        let second: JSONValue = ["c590d3f5-fe9d-4820-97c9-f403535dd306", .string(slug)]
        #expect(!Sampling.bucketSample(second, start: 0, count: 2000, total: 10000))
        #expect(Sampling.bucketSample(second, start: 2000, count: 3000, total: 10000))
        #expect(Sampling.branchIndex(clientID: "299eed1e-be6d-457d-9e53-da7b1a03f10d", slug: "TEST_EXP1", ratios: [1, 1]) == 1)
        #expect(Sampling.branchIndex(clientID: "542213c0-9aef-47eb-bc6b-3b8529736ba2", slug: "TEST_EXP1", ratios: [1, 1]) == 0)
        #expect(Sampling.ratioSample("x", ratios: []) == nil)
    }

    @Test func ratiosSplitManyClientsInProportion() {
        var counts = [0, 0, 0]
        for n in 0..<3000 { counts[Sampling.branchIndex(clientID: "client-\(n)", slug: "exp", ratios: [1, 2, 3])!] += 1 }
        #expect(abs(counts[0] - 500) < 100 && abs(counts[1] - 1000) < 120 && abs(counts[2] - 1500) < 120)
    }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

@Suite struct FirefoxVersionTests {
    @Test(arguments: [
        ("1.0", "1.0.0", 0), ("1.0", "1.1", -1), ("93pre", "93", -1), ("93", "93.0", 0), ("14.!", "14.0", -1),
        ("14.2", "14.!", 1), ("1.2+", "1.3pre", 0), ("1.2+", "1.3", -1), ("*", "100", 1), ("1.0a1", "1.0a", 1),
        ("1.0a", "1.0", -1), ("1.0pre1", "1.0pre2", -1), ("1.0pre2", "1.0b1", 1), ("115.0.1", "115.0", 1), ("2", "10", -1),
    ])
    func ordersLikeFirefox(_ a: String, _ b: String, _ expected: Int) {
        #expect(FirefoxVersion.compare(FirefoxVersion(a), FirefoxVersion(b)) == expected)
        #expect(FirefoxVersion.compare(FirefoxVersion(b), FirefoxVersion(a)) == -expected)
    }
}
