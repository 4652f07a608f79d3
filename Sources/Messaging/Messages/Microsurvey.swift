import Foundation

/// Text ids `Table/Key` resolved through the app's string tables, the raw text otherwise (reference §3.4).
public struct StringTables: Sendable, Equatable {
    public var tables: [String: [String: String]]
    /// Replaces `%@` in titles (Firefox formats them with the app's short name).
    public var appName: String

    public init(_ tables: [String: [String: String]] = [:], appName: String = "Firefox") {
        self.tables = tables
        self.appName = appName
    }

    /// `Table/Key` → the table's value for the key; a name without `/` is looked up as a key in every table; not found
    /// (or mapped to itself) → the name itself, so free text works.
    public func resolve(_ name: String) -> String {
        let parts = name.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        if parts.count == 2, let value = tables[parts[0]]?[parts[1]], value != parts[1] { return value }
        if parts.count == 1 {
            for table in tables.keys.sorted() { if let value = tables[table]?[name], value != name { return value } }
        }
        return name
    }

    func formatted(_ name: String) -> String { resolve(name).replacingOccurrences(of: "%@", with: appName) }
}

/// What the microsurvey UI shows, built from a message (Firefox's `MicrosurveyModel`).
public struct MicrosurveyModel: Sendable, Equatable {
    /// The survey id in telemetry: the message key.
    public var id: String
    public var promptTitle: String
    public var promptButtonLabel: String
    public var question: String
    public var options: [String]
    public var icon: String
    /// The privacy notice link with the microsurvey UTM parameters.
    public var privacyURL: String

    public static let defaultPromptTitle = "Help us make %@ better. It only takes a minute."
    public static let defaultButtonLabel = "Continue"
    public static let privacyBase = "https://www.mozilla.org/en-US/privacy/firefox/"

    public init(message: Message, strings: StringTables) throws(MessagingError) {
        let config = message.data.microsurveyConfig ?? MicrosurveyConfig()
        guard !message.data.text.isEmpty else {
            throw MessagingError(code: "malformed_message", message: "message \(message.key): a microsurvey needs its question in `text`")
        }
        id = message.key
        promptTitle = strings.formatted(message.data.title ?? Self.defaultPromptTitle)
        promptButtonLabel = strings.formatted(message.data.buttonLabel ?? Self.defaultButtonLabel)
        question = strings.resolve(message.data.text)
        options = (config.options.isEmpty ? FirefoxMessagingDefaults.microsurveyOptions : config.options).map(strings.resolve)
        icon = config.icon
        var query = "utm_medium=firefox-mobile&utm_source=modal&utm_campaign=microsurvey"
        if let content = config.utmContent { query += "&utm_content=" + ActionURL.percentEncode(content) }
        privacyURL = Self.privacyBase + "?" + query
    }
}

/// The microsurvey's lifecycle as a value type (seed 000; reference §1.9), with the states Firefox lacks:
/// prompt → (continue) survey → (select) → (submit) confirmation → finished(completed); closing anywhere before the
/// submit finishes it as dismissed. Each step returns what to do: message-state transitions and telemetry.
/// Once finished it never shows again (the message store marks it), whatever `max-display-count` says (bugs B5, B17).
public struct MicrosurveyFlow: Sendable, Equatable {
    public enum Step: Sendable, Equatable {
        case hidden
        case prompt
        case survey(selected: String?)
        case confirmation(selected: String)
        case finished(Outcome)
    }

    public enum Outcome: String, Sendable, Equatable { case completed, dismissed }

    /// What the user (or the UI) did.
    public enum Input: Sendable, Equatable {
        case showPrompt
        case closePrompt
        case continueToSurvey
        case surveyAppeared
        /// The sheet dragged down: back to the prompt, nothing recorded.
        case sheetDismissedByDrag
        case select(String)
        case tapPrivacyNotice
        case submit
        case confirmationViewed
        case closeSurvey
    }

    /// What the caller must do. `messageDisplayed` / `messageClicked` / `messageDismissed` / `messageCompleted` go to
    /// the ``MessageStore`` (which adds the `messaging.*` events); `record` is a telemetry event; `open` a URL.
    public enum Effect: Sendable, Equatable {
        case messageDisplayed
        case messageClicked
        case messageDismissed
        case messageCompleted
        case record(MessagingEvent)
        case open(String)
    }

    public let model: MicrosurveyModel
    public private(set) var step: Step = .hidden

    public init(model: MicrosurveyModel) {
        self.model = model
    }

    /// Applies `input`. Throws `invalid_transition` for an input that makes no sense in the current step (submit
    /// without an option, an option not offered, anything after the end).
    public mutating func handle(_ input: Input) throws(MessagingError) -> [Effect] {
        let survey = ["survey_id": model.id]
        func invalid() -> MessagingError {
            MessagingError(code: "invalid_transition", message: "microsurvey \(model.id): \(input) is not possible while \(step)")
        }
        switch (step, input) {
        case (.hidden, .showPrompt):
            step = .prompt
            return [.messageDisplayed]
        case (.prompt, .showPrompt):
            return []
        case (.prompt, .closePrompt):
            step = .finished(.dismissed)
            return [.messageDismissed]
        case (.prompt, .continueToSurvey):
            step = .survey(selected: nil)
            return [.messageClicked]
        case (.survey, .surveyAppeared):
            return [.record(MessagingEvent("microsurvey", "shown", survey))]
        case (.survey, .sheetDismissedByDrag):
            step = .prompt
            return []
        case (.survey, .select(let option)):
            guard model.options.contains(option) else { throw invalid() }
            step = .survey(selected: option)
            return []
        case (.survey, .tapPrivacyNotice), (.confirmation, .tapPrivacyNotice):
            return [.record(MessagingEvent("microsurvey", "privacy_notice_tapped", survey)), .open(model.privacyURL)]
        case (.survey(let selected), .submit):
            guard let selected else { throw invalid() }
            step = .confirmation(selected: selected)
            return [.record(MessagingEvent("microsurvey", "submit_button_tapped", survey.merging(["user_selection": selected]) { a, _ in a })),
                    .messageCompleted]
        case (.confirmation, .confirmationViewed):
            return [.record(MessagingEvent("microsurvey", "confirmation_shown", survey))]
        case (.confirmation, .closeSurvey):
            step = .finished(.completed)
            return []
        case (.survey, .closeSurvey):
            step = .finished(.dismissed)
            return [.record(MessagingEvent("microsurvey", "dismiss_button_tapped", survey)), .messageDismissed]
        default:
            throw invalid()
        }
    }
}
