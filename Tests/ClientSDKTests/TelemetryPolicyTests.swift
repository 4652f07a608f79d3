import Foundation
import Testing
import Glibc
@testable import ClientSDK
import SurveyWire

@Suite struct TelemetryPolicyTests {
    @Test func rateLimiterOpensAWindowAtTheFirstUploadAndWaitsForItsEnd() {
        var limiter = PingRateLimiter(limit: 3, interval: .seconds(60))
        let t0 = ContinuousClock.now
        #expect(limiter.take(at: t0) == nil)
        #expect(limiter.take(at: t0 + .seconds(1)) == nil)
        #expect(limiter.take(at: t0 + .seconds(2)) == nil)
        // The fourth waits for the rest of the window, to the millisecond (Glean's iOS loop rounds 999 ms to 0: B21).
        #expect(limiter.take(at: t0 + .milliseconds(59_001)) == .milliseconds(999))
        #expect(limiter.take(at: t0 + .seconds(60)) == .zero)
        // A new window opens once the interval has passed.
        #expect(limiter.take(at: t0 + .milliseconds(60_001)) == nil)
        #expect(limiter.take(at: t0 + .seconds(61)) == nil)
        #expect(limiter.take(at: t0 + .seconds(62)) == nil)
        #expect(limiter.take(at: t0 + .seconds(63)) != nil)
    }

    @Test func quotasKeepTheNewestAndTheMaximumAgeDropsOldPings() {
        let day: Int64 = 86_400_000
        let now: Int64 = 100 * day
        var config = TelemetryConfiguration(maxPendingPings: 3, maxPendingBytes: 1000, maxPingAge: .seconds(30 * 86_400))
        let pings = (0..<5).map { PingQuota.Entry(id: "p\($0)", bytes: 100, createdMillis: now - Int64(5 - $0) * 1000) }
        let byCount = PingQuota.overflow(pings, nowMillis: now, configuration: config)
        #expect(byCount.map(\.id) == ["p1", "p0"])
        #expect(byCount.allSatisfy { $0.reason == "count_quota" })
        config.maxPendingPings = 500
        config.maxPendingBytes = 250
        let bySize = PingQuota.overflow(pings, nowMillis: now, configuration: config)
        #expect(bySize.map(\.id) == ["p2", "p1", "p0"])
        #expect(bySize.allSatisfy { $0.reason == "size_quota" })
        config.maxPendingBytes = 1 << 20
        let aged = pings + [PingQuota.Entry(id: "old", bytes: 1, createdMillis: now - 31 * day)]
        #expect(PingQuota.overflow(aged, nowMillis: now, configuration: config).map { "\($0.id):\($0.reason)" } == ["old:max_age"])
        #expect(PingQuota.overflow(pings, nowMillis: now, configuration: config).isEmpty)
    }

    @Test func extraValuesAreTruncatedAt500BytesOnACharacterBoundary() {
        #expect(SurveyClient.truncated("short") == "short")
        let long = String(repeating: "a", count: 499) + "é" + "tail"
        let cut = SurveyClient.truncated(long)
        #expect(cut.utf8.count == 499)
        #expect(cut == String(repeating: "a", count: 499))
        #expect(SurveyClient.truncated(String(repeating: "b", count: 800)).utf8.count == 500)
    }

    @Test func appIDsAreSanitizedAsGleanDoes() {
        #expect(SurveyClient.sanitizedAppID("org.mozilla.Glean_Test App") == "org-mozilla-glean-test-app")
        #expect(SurveyClient.sanitizedAppID("survey-sdk") == "survey-sdk")
        #expect(SurveyClient.sanitizedAppID("a..b") == "a-b")
    }
}
