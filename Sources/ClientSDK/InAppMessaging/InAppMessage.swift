import Messaging

/// An in-app message chosen for a surface (``SurveyClient/nextMessage(for:context:)``), as the app shows it. Hand it
/// back to the client when it is displayed, clicked, dismissed or completed, or to run it as a microsurvey.
public struct InAppMessage: Sendable, Equatable {
    /// The message as the recipe defines it (Messaging's), kept for the client's bookkeeping.
    let message: Message

    init(_ message: Message) { self.message = message }

    /// The message's key in the recipe (the `message_key` of its telemetry; a microsurvey's `survey_id`).
    public var key: String { message.key }
    /// Where it shows (`microsurvey`, `new-tab-card`, ...).
    public var surface: String { message.surface }
    /// `text`: the body, or a string id (`Table/Key`) the app resolves.
    public var text: String { message.data.text }
    /// `title`, if any (text or string id).
    public var title: String? { message.data.title }
    /// `button-label`, if any (text or string id).
    public var buttonLabel: String? { message.data.buttonLabel }
    /// The style's name (`DEFAULT`, `MICROSURVEY`, ...).
    public var style: String { message.data.style }
    /// The experiment that serves it, if any (its exposure is recorded when it is displayed).
    public var experiment: String? { message.data.experiment }
    /// Whether clicking it opens something (``SurveyClient/messageClicked(_:context:scheme:)`` then returns its URL).
    public var hasAction: Bool { message.action != nil && !message.isControl }

    /// What a click opens: the action's URL with its parameters filled in, and the `action_uuid` it carries, if any.
    public struct Action: Sendable, Equatable {
        /// The URL to open (`firefox://deep-link?url=…`).
        public var url: String
        /// The uuid put into the URL for `{uuid}` (also recorded with `messaging.clicked`).
        public var uuid: String?
    }
}

/// What ``SurveyClient/nextMessage(for:context:)`` found: the message to show, if any, and how each message of the
/// surface fared (why nothing showed).
public struct MessageChoice: Sendable, Equatable {
    /// The message to show now, or nil.
    public var message: InAppMessage?
    /// The messages weighed, in the order they were: each with its outcome and its triggers' results.
    public var weighed: [Weighed]

    /// How one message fared.
    public struct Weighed: Sendable, Equatable {
        /// The message's key.
        public var key: String
        /// `selected`, `other_surface`, `expired`, `interacted`, `not_eligible`, `control` or `not_reached`.
        public var outcome: String
        /// Each `trigger-if-all` trigger by name, with its result (`true`, `false` or `error: …`), in order.
        public var triggers: [Trigger]
        /// Each `except-if-any` trigger, as ``triggers``.
        public var exceptions: [Trigger]
    }

    /// A trigger and what it evaluated to.
    public struct Trigger: Sendable, Equatable {
        /// The trigger's name (`SECOND_HOMEPAGE_VIEW`).
        public var name: String
        /// `true`, `false`, or `error: …`.
        public var result: String
    }

    init(_ selection: MessageSelection) {
        message = selection.message.map(InAppMessage.init)
        weighed = selection.trace.map { trace in
            Weighed(key: trace.key, outcome: trace.outcome, triggers: trace.triggers.map { Trigger(name: $0.name, result: $0.result) },
                    exceptions: trace.exceptions.map { Trigger(name: $0.name, result: $0.result) })
        }
    }
}
