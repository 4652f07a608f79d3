import Foundation
import SurveyWire

/// The attributes targeting expressions read (reference §2.2), built from what the app knows. Pure: the clock and the
/// time zone are passed in.
public struct TargetingContext: Sendable, Equatable {
    public var appName: String
    public var appID: String
    public var channel: String
    public var appVersion: String
    public var os: String
    public var osVersion: String
    /// BCP 47-ish `en-US`; `language` and `region` are split from it.
    public var locale: String
    public var installationDate: Date
    /// When `appVersion` last changed (the installation date on a first install).
    public var updateDate: Date
    public var isDefaultBrowser: Bool
    public var isFxaSignedIn: Bool
    public var numberOfAppLaunches: Int
    public var allowedTipsNotifications: Bool
    public var isInactiveNewUser: Bool
    /// The app's own attributes, flattened in last (they win).
    public var custom: [String: JSONValue]

    public init(appName: String = "survey-sdk", appID: String = "survey-sdk", channel: String = "release", appVersion: String = "1.0",
                os: String = "iOS", osVersion: String = "17.0", locale: String = "en-US", installationDate: Date, updateDate: Date? = nil,
                isDefaultBrowser: Bool = false, isFxaSignedIn: Bool = false, numberOfAppLaunches: Int = 1,
                allowedTipsNotifications: Bool = false, isInactiveNewUser: Bool = false, custom: [String: JSONValue] = [:]) {
        self.appName = appName
        self.appID = appID
        self.channel = channel
        self.appVersion = appVersion
        self.os = os
        self.osVersion = osVersion
        self.locale = locale
        self.installationDate = installationDate
        self.updateDate = updateDate ?? installationDate
        self.isDefaultBrowser = isDefaultBrowser
        self.isFxaSignedIn = isFxaSignedIn
        self.numberOfAppLaunches = numberOfAppLaunches
        self.allowedTipsNotifications = allowedTipsNotifications
        self.isInactiveNewUser = isInactiveNewUser
        self.custom = custom
    }

    /// The JSON context at `now`. `days_since_*` count whole 24-hour periods (not calendar days), as Nimbus does;
    /// `date_string` is `yyyy-MM-dd` in `timeZone` (Firefox used `yyyy-mm-dd`, minutes for months: bug B13).
    public func attributes(now: Date, timeZone: TimeZone = TimeZone(identifier: "UTC")!) -> [String: JSONValue] {
        let parts = locale.split(whereSeparator: { $0 == "-" || $0 == "_" }).map(String.init)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let d = calendar.dateComponents([.year, .month, .day], from: now)
        let date = String(format: "%04d-%02d-%02d", d.year ?? 0, d.month ?? 0, d.day ?? 0)
        func days(since then: Date) -> JSONValue { .number(Double(Int(now.timeIntervalSince(then) / 86_400))) }
        var context: [String: JSONValue] = [
            "app_name": .string(appName), "app_id": .string(appID), "channel": .string(channel), "app_version": .string(appVersion),
            "os": .string(os), "os_version": .string(osVersion), "locale": .string(locale),
            "language": .string(parts.first ?? ""), "region": parts.count > 1 ? .string(parts[parts.count - 1]) : .null,
            "installation_date": .number((installationDate.timeIntervalSince1970 * 1000).rounded(.down)),
            "days_since_install": days(since: installationDate), "days_since_update": days(since: updateDate),
            "current_date": .number(now.timeIntervalSince1970.rounded(.down)), "date_string": .string(date),
            "is_default_browser": .bool(isDefaultBrowser), "is_fxa_signed_in": .bool(isFxaSignedIn),
            "number_of_app_launches": .number(Double(numberOfAppLaunches)),
            "allowed_tips_notifications": .bool(allowedTipsNotifications), "is_inactive_new_user": .bool(isInactiveNewUser),
        ]
        for (k, v) in custom { context[k] = v }
        return context
    }
}
