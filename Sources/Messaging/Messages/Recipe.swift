import SurveyWire

/// A message style: how important and how many sessions it may be shown (reference §1.3).
public struct StyleData: Sendable, Equatable, Codable {
    public var priority: Int
    public var maxDisplayCount: Int

    public init(priority: Int = 50, maxDisplayCount: Int = 5) {
        self.priority = priority
        self.maxDisplayCount = maxDisplayCount
    }

    static func parse(_ value: JSONValue, path: String) throws(MessagingError) -> StyleData {
        let r = try JSONReader(value, path: path, allowed: ["priority", "max-display-count"])
        return StyleData(priority: try r.int("priority", default: 50), maxDisplayCount: try r.int("max-display-count", default: 5))
    }
}

/// The microsurvey part of a message (`microsurveyConfig`).
public struct MicrosurveyConfig: Sendable, Equatable, Codable {
    public var utmContent: String?
    public var icon: String
    /// Option texts (or string ids); empty means the default Likert set.
    public var options: [String]

    public init(utmContent: String? = nil, icon: String = "lightbulbLarge", options: [String] = []) {
        self.utmContent = utmContent
        self.icon = icon
        self.options = options
    }
}

/// One message of a recipe, as written (reference §1.2), with the FML defaults applied.
public struct MessageData: Sendable, Equatable {
    public var action: String?
    public var actionParams: [String: String]
    public var title: String?
    public var text: String
    public var isControl: Bool
    public var buttonLabel: String?
    public var style: String
    public var triggerIfAll: [String]
    public var exceptIfAny: [String]
    public var surface: String
    public var experiment: String?
    public var microsurveyConfig: MicrosurveyConfig?
    /// True when `trigger-if-all` was absent and the default `[ALWAYS]` applies (reported, not silent: bug B12).
    public var defaultedTriggers: Bool

    static let keys: Set<String> = ["action", "action-params", "title", "text", "is-control", "button-label", "style",
                                    "trigger-if-all", "except-if-any", "surface", "experiment", "microsurveyConfig"]

    static func parse(_ value: JSONValue, path: String) throws(MessagingError) -> MessageData {
        let r = try JSONReader(value, path: path, allowed: keys)
        var config: MicrosurveyConfig?
        if r.has("microsurveyConfig") {
            let m = try JSONReader(r.object["microsurveyConfig"]!, path: path + ".microsurveyConfig", allowed: ["utm-content", "icon", "options"])
            config = MicrosurveyConfig(utmContent: try m.string("utm-content"), icon: try m.string("icon", default: "lightbulbLarge"),
                                       options: try m.strings("options") ?? [])
        }
        let triggers = try r.strings("trigger-if-all")
        return MessageData(action: try r.string("action"), actionParams: try r.stringMap("action-params") ?? [:],
                           title: try r.string("title"), text: try r.string("text", default: ""),
                           isControl: try r.bool("is-control", default: false), buttonLabel: try r.string("button-label"),
                           style: try r.string("style", default: "DEFAULT"), triggerIfAll: triggers ?? ["ALWAYS"],
                           exceptIfAny: try r.strings("except-if-any") ?? [], surface: try r.string("surface", default: "Unknown"),
                           experiment: try r.string("experiment"), microsurveyConfig: config, defaultedTriggers: triggers == nil)
    }
}

/// What to do after a control message was selected (`on-control`).
public enum ControlBehavior: String, Sendable, Equatable {
    case showNextMessage = "show-next-message", showNone = "show-none"
}

/// A message that passed validation, ready for selection.
public struct Message: Sendable, Equatable {
    public var key: String
    public var data: MessageData
    /// The action URL template (`actions[action] ?? action`), `CONTROL_ACTION` for controls, nil when none.
    public var action: String?
    public var style: StyleData
    /// The trigger expressions, resolved from their names.
    public var triggers: [(name: String, expression: String)]
    public var exceptions: [(name: String, expression: String)]

    public var surface: String { data.surface }
    public var isControl: Bool { data.isControl }
    /// The key message state is stored under: experiment slug and message key (bug B11).
    public var stateKey: String { (data.experiment ?? "") + "|" + key }

    public static func == (a: Message, b: Message) -> Bool {
        a.key == b.key && a.data == b.data && a.action == b.action && a.style == b.style
            && a.triggers.map(\.name) == b.triggers.map(\.name) && a.exceptions.map(\.name) == b.exceptions.map(\.name)
    }
}

/// A message that could not be used, and why (recorded as `messaging.malformed`).
public struct MalformedMessage: Sendable, Equatable {
    public var key: String
    public var surface: String
    public var reason: String
}

/// The `messaging` feature value, loaded and validated (reference §1.1–§1.4). Unknown keys anywhere are errors; each
/// message is built by Firefox's `createMessage` rules, and every trigger expression is parsed when the recipe loads,
/// so a trigger the real engine could not parse is reported here rather than at display time.
public struct MessagingRecipe: Sendable {
    public var messages: [Message]
    public var malformed: [MalformedMessage]
    public var triggers: [String: String]
    public var styles: [String: StyleData]
    public var actions: [String: String]
    public var onControl: ControlBehavior
    /// Things worth a log line that do not stop a message: defaulted triggers, lint findings.
    public var notes: [String]

    static let keys: Set<String> = ["messages", "triggers", "styles", "actions", "on-control", "message-under-experiment"]

    /// Builds the recipe from a feature value (already merged over the app's defaults).
    /// - Throws: `unknown_key` / `wrong_type` for the feature's own fields; problems inside one message only make that
    ///   message malformed.
    public init(feature value: JSONValue, knownEvents: Set<String>? = nil) throws(MessagingError) {
        let r = try JSONReader(value, path: "messaging", allowed: Self.keys)
        triggers = try r.stringMap("triggers") ?? [:]
        actions = try r.stringMap("actions") ?? [:]
        var styles: [String: StyleData] = [:]
        for (name, style) in try r.objectMap("styles") ?? [:] { styles[name] = try StyleData.parse(style, path: "messaging.styles.\(name)") }
        self.styles = styles
        let control = try r.string("on-control", default: ControlBehavior.showNextMessage.rawValue)
        guard let behavior = ControlBehavior(rawValue: control) else {
            throw MessagingError(code: "wrong_type", message: "messaging.on-control must be show-next-message or show-none, not \(control)")
        }
        onControl = behavior
        messages = []
        malformed = []
        notes = []
        // Trigger expressions checked once each.
        var triggerProblems: [String: String] = [:]
        for (name, expression) in triggers {
            if let error = TargetingHelper.validate(expression) { triggerProblems[name] = "trigger \(name): \(error.message)" }
            for warning in TargetingHelper.lint(expression, knownEvents: knownEvents) { notes.append("trigger \(name): \(warning)") }
        }
        for (key, raw) in (try r.objectMap("messages") ?? [:]).sorted(by: { $0.key < $1.key }) {
            let surface = raw.objectValue?["surface"]?.stringValue ?? "Unknown"
            do throws(MessagingError) {
                let data = try MessageData.parse(raw, path: "messaging.messages.\(key)")
                if data.defaultedTriggers { notes.append("message \(key) has no trigger-if-all; the default [ALWAYS] applies") }
                messages.append(try build(key: key, data: data, triggerProblems: triggerProblems))
            } catch {
                malformed.append(MalformedMessage(key: key, surface: surface, reason: error.message))
            }
        }
        messages.sort { $0.key < $1.key }
    }

    /// Firefox's `createMessage` checks, plus: a control needs an experiment (bug B22), and a trigger whose expression
    /// does not parse makes the message malformed now.
    func build(key: String, data: MessageData, triggerProblems: [String: String]) throws(MessagingError) -> Message {
        func fail(_ reason: String) -> MessagingError { MessagingError(code: "malformed_message", message: "message \(key): \(reason)") }
        var action: String?
        if data.isControl {
            guard data.experiment != nil else { throw fail("a control message needs `experiment`") }
            action = "CONTROL_ACTION"
        } else {
            guard !data.text.isEmpty else { throw fail("`text` is empty") }
            if let name = data.action {
                let resolved = actions[name] ?? name
                guard resolved.contains("://") else { throw fail("action `\(name)` is neither a known action nor a URL") }
                action = resolved
            }
        }
        guard let style = styles[data.style] else { throw fail("style `\(data.style)` is not defined") }
        var resolvedTriggers: [(String, String)] = []
        var resolvedExceptions: [(String, String)] = []
        for (names, isTrigger) in [(data.triggerIfAll, true), (data.exceptIfAny, false)] {
            for name in names {
                guard let expression = triggers[name] else { throw fail("trigger `\(name)` is not defined") }
                if let problem = triggerProblems[name] { throw fail(problem) }
                if isTrigger { resolvedTriggers.append((name, expression)) } else { resolvedExceptions.append((name, expression)) }
            }
        }
        return Message(key: key, data: data, action: action, style: style,
                       triggers: resolvedTriggers.map { (name: $0.0, expression: $0.1) },
                       exceptions: resolvedExceptions.map { (name: $0.0, expression: $0.1) })
    }
}
