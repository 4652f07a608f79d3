import Messaging

/// A microsurvey in progress, made from a message (``SurveyClient/microsurvey(for:strings:appName:)``) and moved on
/// with ``SurveyClient/microsurvey(_:_:)``, which records its telemetry and keeps the message's state: prompt →
/// (continue) survey → (select, submit) confirmation → finished(completed); closing before the submit finishes it as
/// dismissed. Once finished its message never shows again.
public struct Microsurvey: Sendable, Equatable {
    /// Where the microsurvey is.
    public enum Step: Sendable, Equatable {
        /// Not shown yet.
        case hidden
        /// The prompt is shown.
        case prompt
        /// The survey sheet is shown, with the option selected so far.
        case survey(selected: String?)
        /// The answer was submitted; the confirmation is shown.
        case confirmation(selected: String)
        /// Done: it never shows again.
        case finished(Outcome)
    }

    /// How a microsurvey ended.
    public enum Outcome: String, Sendable, Equatable {
        /// The user submitted an answer.
        case completed
        /// The user closed it before submitting.
        case dismissed
    }

    /// What the user (or the UI) did.
    public enum Input: Sendable, Equatable {
        /// The prompt appeared.
        case showPrompt
        /// The user closed the prompt.
        case closePrompt
        /// The user pressed the prompt's button.
        case continueToSurvey
        /// The survey sheet appeared.
        case surveyAppeared
        /// The sheet was dragged down: back to the prompt, nothing recorded.
        case sheetDismissedByDrag
        /// The user chose one of ``Microsurvey/options``.
        case select(String)
        /// The user opened the privacy notice (``Microsurvey/privacyURL``).
        case tapPrivacyNotice
        /// The user submitted the selected option.
        case submit
        /// The confirmation appeared.
        case confirmationViewed
        /// The user closed the survey sheet.
        case closeSurvey
    }

    var flow: MicrosurveyFlow
    /// The message it came from.
    public let message: InAppMessage

    init(flow: MicrosurveyFlow, message: InAppMessage) {
        self.flow = flow
        self.message = message
    }

    /// Where it is now.
    public var step: Step {
        switch flow.step {
        case .hidden: .hidden
        case .prompt: .prompt
        case .survey(let selected): .survey(selected: selected)
        case .confirmation(let selected): .confirmation(selected: selected)
        case .finished(.completed): .finished(.completed)
        case .finished(.dismissed): .finished(.dismissed)
        }
    }

    /// The prompt's title, resolved and formatted with the app's name.
    public var promptTitle: String { flow.model.promptTitle }
    /// The prompt's button label, resolved.
    public var promptButtonLabel: String { flow.model.promptButtonLabel }
    /// The question, resolved.
    public var question: String { flow.model.question }
    /// The options offered, resolved, in order.
    public var options: [String] { flow.model.options }
    /// The icon's name.
    public var icon: String { flow.model.icon }
    /// The privacy notice, with the microsurvey's UTM parameters.
    public var privacyURL: String { flow.model.privacyURL }
}

extension Microsurvey.Input {
    /// The flow's input.
    var flowInput: MicrosurveyFlow.Input {
        switch self {
        case .showPrompt: .showPrompt
        case .closePrompt: .closePrompt
        case .continueToSurvey: .continueToSurvey
        case .surveyAppeared: .surveyAppeared
        case .sheetDismissedByDrag: .sheetDismissedByDrag
        case .select(let option): .select(option)
        case .tapPrivacyNotice: .tapPrivacyNotice
        case .submit: .submit
        case .confirmationViewed: .confirmationViewed
        case .closeSurvey: .closeSurvey
        }
    }
}
