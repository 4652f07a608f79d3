import Foundation
import Messaging
import SurveyWire

/// What the app knows about itself and its user, for the targeting expressions of in-app messages
/// (``SurveyClient/nextMessage(for:context:)``). Each field is the attribute Firefox's and Nimbus's expressions read
/// (`app_version`, `locale`, `days_since_install`, `is_default_browser`, ...); ``custom`` adds the app's own.
public struct AppContext: Sendable, Equatable {
    /// A custom attribute's value: text, a number or a flag.
    public enum Value: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
        ExpressibleByBooleanLiteral {
        /// Text (compared as a string).
        case text(String)
        /// A number (integers too: expressions compare numbers).
        case number(Double)
        /// A flag.
        case flag(Bool)

        /// A text value.
        public init(stringLiteral value: String) { self = .text(value) }
        /// A number.
        public init(integerLiteral value: Int) { self = .number(Double(value)) }
        /// A number.
        public init(floatLiteral value: Double) { self = .number(value) }
        /// A flag.
        public init(booleanLiteral value: Bool) { self = .flag(value) }

        var json: JSONValue {
            switch self {
            case .text(let text): .string(text)
            case .number(let number): .number(number)
            case .flag(let flag): .bool(flag)
            }
        }
    }

    /// `app_name`.
    public var appName: String
    /// `app_id`.
    public var appID: String
    /// `channel` (`release`, `beta`, `nightly`).
    public var channel: String
    /// `app_version`.
    public var appVersion: String
    /// `os`.
    public var os: String
    /// `os_version`.
    public var osVersion: String
    /// `locale` (`en-US`); `language` and `region` are taken from it.
    public var locale: String
    /// When the app was installed (`installation_date`, `days_since_install`).
    public var installationDate: Date
    /// When ``appVersion`` last changed (`days_since_update`); the installation date on a first install.
    public var updateDate: Date
    /// `is_default_browser`.
    public var isDefaultBrowser: Bool
    /// `is_fxa_signed_in`.
    public var isFxaSignedIn: Bool
    /// `number_of_app_launches`.
    public var numberOfAppLaunches: Int
    /// `allowed_tips_notifications`.
    public var allowedTipsNotifications: Bool
    /// `is_inactive_new_user`.
    public var isInactiveNewUser: Bool
    /// The app's own attributes, by the name expressions use; they win over the fields above.
    public var custom: [String: Value]

    /// Creates a context; the defaults are those of a fresh install of a release build.
    public init(appName: String = "survey-sdk", appID: String = "survey-sdk", channel: String = "release", appVersion: String = "1.0",
                os: String = "iOS", osVersion: String = "17.0", locale: String = "en-US", installationDate: Date, updateDate: Date? = nil,
                isDefaultBrowser: Bool = false, isFxaSignedIn: Bool = false, numberOfAppLaunches: Int = 1,
                allowedTipsNotifications: Bool = false, isInactiveNewUser: Bool = false, custom: [String: Value] = [:]) {
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

    /// The context Messaging's targeting reads.
    var targeting: TargetingContext {
        TargetingContext(appName: appName, appID: appID, channel: channel, appVersion: appVersion, os: os, osVersion: osVersion,
                         locale: locale, installationDate: installationDate, updateDate: updateDate, isDefaultBrowser: isDefaultBrowser,
                         isFxaSignedIn: isFxaSignedIn, numberOfAppLaunches: numberOfAppLaunches,
                         allowedTipsNotifications: allowedTipsNotifications, isInactiveNewUser: isInactiveNewUser,
                         custom: custom.mapValues(\.json))
    }
}
