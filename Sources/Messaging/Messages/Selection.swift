import Foundation
import SurveyWire

/// How one message fared in a selection (for `survey-cli messaging eval` and logs).
public struct MessageTrace: Sendable, Equatable, Codable {
    public struct Trigger: Sendable, Equatable, Codable {
        public var name: String
        public var expression: String
        /// `true`, `false`, or `error: …`.
        public var result: String
    }

    public var key: String
    public var priority: Int
    /// `selected`, `other_surface`, `expired`, `interacted`, `not_eligible`, `control` (bookkeeping done, skipped),
    /// `not_reached` (a message before it was chosen).
    public var outcome: String
    public var triggers: [Trigger]
    public var exceptions: [Trigger]
}

/// The result of asking for the next message on a surface.
public struct MessageSelection: Sendable {
    public var message: Message?
    /// Telemetry to record now (control messages' exposure and impression bookkeeping).
    public var events: [MessagingEvent]
    public var trace: [MessageTrace]
}

/// Firefox's `getNextMessage(for:)` (reference §1.5), with a deterministic order: messages of the surface that are
/// neither expired nor interacted with, by priority descending and then by key (bug B19); the first whose
/// `trigger-if-all` all hold and none of whose `except-if-any` does is chosen; an expression error makes a message
/// ineligible. A control message chosen is counted (impression + exposure) and then, per `on-control`, either nothing
/// is shown or the search goes on.
public enum MessageSelector {
    public static func next(for surface: String, recipe: MessagingRecipe, store: inout MessageStore, helper: TargetingHelper,
                            sessionID: String, now: Date, enrollments: [String: String] = [:]) -> MessageSelection {
        var events: [MessagingEvent] = []
        var trace: [MessageTrace] = []
        let ordered = recipe.messages.sorted { a, b in
            a.style.priority != b.style.priority ? a.style.priority > b.style.priority : a.key < b.key
        }
        var chosen: Message?
        for message in ordered {
            var entry = MessageTrace(key: message.key, priority: message.style.priority, outcome: "", triggers: [], exceptions: [])
            defer { trace.append(entry) }
            if chosen != nil { entry.outcome = "not_reached"; continue }
            guard message.surface == surface else { entry.outcome = "other_surface"; continue }
            if store.isExpired(message) { entry.outcome = "expired"; continue }
            if store.state(message).isInteractedWith { entry.outcome = "interacted"; continue }
            let (eligible, triggers, exceptions) = evaluate(message, helper: helper)
            entry.triggers = triggers
            entry.exceptions = exceptions
            guard eligible else { entry.outcome = "not_eligible"; continue }
            if message.isControl {
                entry.outcome = "control"
                events += store.displayed(message, sessionID: sessionID, at: now)
                if let slug = message.data.experiment {
                    events.append(MessagingEvent("nimbus_events", "exposure",
                                                 ["experiment": slug, "branch": enrollments[slug] ?? "", "feature_id": "messaging"]))
                }
                if recipe.onControl == .showNone { return MessageSelection(message: nil, events: events, trace: trace + [entry]) }
                continue
            }
            entry.outcome = "selected"
            chosen = message
        }
        return MessageSelection(message: chosen, events: events, trace: trace)
    }

    /// `AND(trigger-if-all) && !OR(except-if-any)`, each expression's result kept for the trace.
    static func evaluate(_ message: Message, helper: TargetingHelper) -> (Bool, [MessageTrace.Trigger], [MessageTrace.Trigger]) {
        func run(_ list: [(name: String, expression: String)]) -> [(MessageTrace.Trigger, Bool?)] {
            list.map { item in
                do throws(JEXLError) {
                    let value = try helper.evaluate(item.expression)
                    return (MessageTrace.Trigger(name: item.name, expression: item.expression, result: String(value)), value)
                } catch {
                    return (MessageTrace.Trigger(name: item.name, expression: item.expression, result: "error: \(error.message)"), nil)
                }
            }
        }
        let triggers = run(message.triggers)
        let exceptions = run(message.exceptions)
        // An error in either list makes the message ineligible (Firefox: `catch { return false }`).
        let allHold = triggers.allSatisfy { $0.1 == true }
        let noneHolds = exceptions.allSatisfy { $0.1 == false }
        return (allHold && noneHolds, triggers.map(\.0), exceptions.map(\.0))
    }
}

/// Builds a message's action URL (reference §1.7): `{uuid}` gets a fresh id (the same one everywhere in the URL), other
/// `{name}` placeholders are replaced from the context (unknown names stay as written), a URL starting with `://`
/// gets the app's scheme, and each `action-params` entry becomes a query item.
public enum ActionURL {
    public struct Built: Sendable, Equatable {
        public var url: String
        /// The id that replaced `{uuid}`, reported as `action_uuid` in `messaging.clicked`.
        public var uuid: String?
    }

    public static func build(_ template: String, params: [String: String] = [:], context: [String: JSONValue] = [:],
                             scheme: String, makeUUID: () -> String) throws(MessagingError) -> Built {
        var uuid: String?
        func format(_ text: String) -> String {
            if text.contains("{uuid}"), uuid == nil { uuid = makeUUID() }
            var out = ""
            var rest = Substring(text)
            while let open = rest.firstIndex(of: "{") {
                out += rest[..<open]
                guard let close = rest[open...].firstIndex(of: "}") else { break }
                let name = String(rest[rest.index(after: open)..<close])
                if name == "uuid", let uuid {
                    out += uuid
                } else if let value = context[name], let text = scalarText(value) {
                    out += text
                } else {
                    out += rest[open...close]
                }
                rest = rest[rest.index(after: close)...]
            }
            return out + rest
        }
        var url = format(template)
        if url.hasPrefix("://") { url = scheme + url }
        if !params.isEmpty {
            var items: [String] = []
            for key in params.keys.sorted() {
                items.append(percentEncode(key) + "=" + percentEncode(format(params[key]!)))
            }
            url += (url.contains("?") ? "&" : "?") + items.joined(separator: "&")
        }
        guard let parsed = URL(string: url), parsed.scheme != nil else {
            throw MessagingError(code: "malformed_action", message: "the action `\(template)` does not make a URL: \(url)")
        }
        return Built(url: url, uuid: uuid)
    }

    static func scalarText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): return s
        case .bool(let b): return String(b)
        case .number(let n): return n.rounded() == n && abs(n) < 1e15 ? String(Int64(n)) : String(n)
        default: return nil
        }
    }

    static func percentEncode(_ text: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+?#")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// A deep link a message can carry, parsed into what the app should do (reference §1.3; MMA's
/// `firefox://deep-link?url=...`; both the full scheme and the `://` form).
public enum DeepLink: Sendable, Equatable {
    case settings(String)
    case homePanel(String)
    case defaultBrowser(String)
    case openURL(String?)
    case shareSheet
    /// Parsed but not one the app knows: the app decides (Firefox ignores such links).
    case unknown(String)

    /// Parses `firefox://deep-link?url=settings/fxa`, `://deep-link?url=homepanel/bookmarks`,
    /// `firefox://open-url?url=https://…`, `://share-sheet`. Nil for a URL of another scheme.
    public static func parse(_ link: String, scheme: String = "firefox") -> DeepLink? {
        var text = link
        if text.hasPrefix("://") { text = scheme + text }
        guard let components = URLComponents(string: text), components.scheme == scheme else { return nil }
        let host = components.host ?? ""
        let url = components.queryItems?.first(where: { $0.name == "url" })?.value
        switch host {
        case "deep-link":
            guard var target = url, !target.isEmpty else { return .unknown(link) }
            if target.hasPrefix("/") { target = "homepanel" + target }  // MMA.md writes `/history` for homepanel/history
            let parts = target.split(separator: "/", maxSplits: 1).map(String.init)
            let section = parts[0]
            let rest = parts.count > 1 ? parts[1] : ""
            switch section {
            case "settings": return .settings(rest.isEmpty ? "general" : rest)
            case "homepanel": return rest.isEmpty ? .unknown(link) : .homePanel(rest)
            case "default-browser": return rest.isEmpty ? .unknown(link) : .defaultBrowser(rest)
            default: return .unknown(link)
            }
        case "open-url": return .openURL(url)
        case "share-sheet": return .shareSheet
        default: return .unknown(link)
        }
    }
}
