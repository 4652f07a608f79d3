import Foundation

/// Beiwe's resend of unconfirmed survey pushes (PROTOCOL.md §9; `services/resend_push_notifications.py`): a survey
/// push to an iOS app from version 2024.27 whose receipt the app has not confirmed is sent again once
/// `resend_period_minutes` of study time have passed since it was last sent, on Beiwe's 6-minute grid. Pure: the
/// scheduler computes each sent occurrence's next resend moment with it when it sends, and the store finds the moments.
enum ResendRule {
    /// Beiwe's `IOS_APP_MINIMUM_PUSH_NOTIFICATION_RESEND_VERSION`.
    static let minimumIOSVersion = [2024, 27]
    /// Beiwe's task runs every 6 minutes and snaps both times to that grid.
    static let grid: Double = 360
    /// How long after an occurrence fell due it is still resent: Beiwe resends only to devices active in the last 7
    /// days; a device that never confirms is taken as inactive a week after the survey (a deliberate difference:
    /// docs/DECISIONS.md).
    static let activeWindow: Double = 7 * 86_400
    /// `resend_period_minutes` when a study does not set it.
    static let defaultPeriodMinutes = 180

    /// Whether a participant's app gets resends: iOS, version_name 2024.27 or later (compared number by number).
    static func eligible(os: String?, versionName: String?) -> Bool {
        guard os == "ios", let versionName else { return false }
        let parts = versionName.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
        guard !parts.isEmpty else { return false }
        for (index, minimum) in minimumIOSVersion.enumerated() {
            let part = index < parts.count ? parts[index] : 0
            if part != minimum { return part > minimum }
        }
        return true
    }

    /// The study's period in seconds, from its `device_settings` value of `resend_period_minutes` (default 180; 0 = off).
    static func period(minutes: Double?) -> Double {
        max(0, minutes ?? Double(defaultPeriodMinutes)) * 60
    }

    /// The first of Beiwe's 6-minute runs at which an occurrence last sent at `lastSent` is resent: the first grid
    /// moment `g` with `grid(lastSent) <= g - period`. Nil when the period is 0 (off) or the moment falls after the
    /// occurrence's active window (`dueAt` + 7 days).
    static func nextResend(lastSent: Double, period: Double, dueAt: Double) -> Double? {
        guard period > 0 else { return nil }
        let earliest = floor(lastSent / grid) * grid + period
        let moment = ceil(earliest / grid) * grid
        return moment <= dueAt + activeWindow ? moment : nil
    }
}
