@testable import MockServer
import Testing

/// Beiwe's resend rule (`services/resend_push_notifications.py`), as ``ResendRule`` computes it.
@Suite struct ResendRuleTests {
    @Test func onlyIOSAppsFrom2024_27AreResentTo() {
        #expect(ResendRule.eligible(os: "ios", versionName: "2024.27"))
        #expect(ResendRule.eligible(os: "ios", versionName: "2024.30"))
        #expect(ResendRule.eligible(os: "ios", versionName: "2025.1"))
        #expect(ResendRule.eligible(os: "ios", versionName: "2024.27.1"))
        #expect(!ResendRule.eligible(os: "ios", versionName: "2024.26"))
        #expect(!ResendRule.eligible(os: "ios", versionName: "2023.99"))
        #expect(!ResendRule.eligible(os: "ios", versionName: "0.2.0"))
        #expect(!ResendRule.eligible(os: "ios", versionName: nil))
        #expect(!ResendRule.eligible(os: "android", versionName: "2025.1"))
    }

    @Test func theNextResendIsOnTheSixMinuteGridAPeriodAfterTheLastSend() {
        let hour = 3600.0
        // Sent on the grid: exactly a period later.
        #expect(ResendRule.nextResend(lastSent: 36_000, period: hour, dueAt: 36_000) == 39_600)
        // Sent between grid points: the send snaps down, the moment rounds up to the grid.
        #expect(ResendRule.nextResend(lastSent: 36_100, period: hour, dueAt: 36_000) == 39_600)
        #expect(ResendRule.nextResend(lastSent: 36_000, period: 3_700, dueAt: 36_000) == 39_960)
        // Off, and past the week after the survey fell due.
        #expect(ResendRule.nextResend(lastSent: 36_000, period: 0, dueAt: 36_000) == nil)
        #expect(ResendRule.nextResend(lastSent: 36_000 + 7 * 86_400, period: hour, dueAt: 36_000) == nil)
    }

    @Test func thePeriodDefaultsToBeiwesThreeHours() {
        #expect(ResendRule.period(minutes: nil) == 10_800)
        #expect(ResendRule.period(minutes: 0) == 0)
        #expect(ResendRule.period(minutes: 6) == 360)
    }
}
