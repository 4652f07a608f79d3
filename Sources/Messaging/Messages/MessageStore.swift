import Foundation

/// A telemetry event the caller records (through the SDK's telemetry): `messaging.shown`, `microsurvey.shown`, ...
public struct MessagingEvent: Sendable, Equatable, Codable, CustomStringConvertible {
    public var category: String
    public var name: String
    public var extra: [String: String]

    public init(_ category: String, _ name: String, _ extra: [String: String]) {
        self.category = category
        self.name = name
        self.extra = extra
    }

    public var description: String { "\(category).\(name)" }

    static func messaging(_ name: String, _ message: Message, extra: [String: String] = [:]) -> MessagingEvent {
        MessagingEvent("messaging", name, extra.merging(["message_key": message.key, "message_surface": message.surface]) { a, _ in a })
    }
}

/// What the device remembers about one message.
public struct MessageState: Sendable, Equatable, Codable {
    /// Sessions in which the message was shown (one impression per session at most).
    public var impressions = 0
    public var dismissals = 0
    public var clicks = 0
    /// The user finished what the message asked (a microsurvey submitted).
    public var completed = false
    /// Never shown again.
    public var isExpired = false
    /// Seconds since 1970 of the last display, and its session.
    public var lastShown: Double?
    public var lastSessionID: String?

    public init() {}

    /// Dismissed, clicked or completed: done with, whatever `max-display-count` says (bugs B5, B17).
    public var isInteractedWith: Bool { isExpired || dismissals > 0 || completed }
}

/// Per-message state, keyed by experiment slug and message key so that a new experiment reusing a key starts fresh
/// (bug B11). A value type: each transition returns the telemetry to record; the SDK saves the store after it.
public struct MessageStore: Sendable, Equatable, Codable {
    public private(set) var states: [String: MessageState] = [:]

    public init() {}

    public func state(_ message: Message) -> MessageState { states[message.stateKey] ?? MessageState() }

    /// Expired by a flag or by reaching the style's display count.
    public func isExpired(_ message: Message) -> Bool {
        let s = state(message)
        return s.isExpired || s.impressions >= message.style.maxDisplayCount
    }

    /// The message was shown. An impression counts once per session (`max-display-count` is "sessions"); the one that
    /// reaches the cap expires the message and reports `messaging.expired` before `messaging.shown`, as Firefox does.
    public mutating func displayed(_ message: Message, sessionID: String, at now: Date) -> [MessagingEvent] {
        var s = state(message)
        var events: [MessagingEvent] = []
        if s.lastSessionID != sessionID {
            s.impressions += 1
            s.lastSessionID = sessionID
            if !s.isExpired, s.impressions >= message.style.maxDisplayCount {
                s.isExpired = true
                events.append(.messaging("expired", message))
            }
        }
        s.lastShown = now.timeIntervalSince1970
        states[message.stateKey] = s
        if !message.isControl { events.append(.messaging("shown", message)) }
        return events
    }

    /// The message (or its button) was pressed. It expires unless `shouldExpire` is false.
    public mutating func clicked(_ message: Message, actionUUID: String? = nil, shouldExpire: Bool = true) -> [MessagingEvent] {
        var s = state(message)
        s.clicks += 1
        if shouldExpire { s.isExpired = true }
        states[message.stateKey] = s
        return [.messaging("clicked", message, extra: actionUUID.map { ["action_uuid": $0] } ?? [:])]
    }

    /// The user closed the message.
    public mutating func dismissed(_ message: Message) -> [MessagingEvent] {
        var s = state(message)
        s.dismissals += 1
        s.isExpired = true
        states[message.stateKey] = s
        return [.messaging("dismissed", message)]
    }

    /// The user did what the message asked (our addition: Firefox reports a finished microsurvey as dismissed, B17).
    public mutating func completed(_ message: Message) -> [MessagingEvent] {
        var s = state(message)
        s.completed = true
        s.isExpired = true
        states[message.stateKey] = s
        return [.messaging("completed", message)]
    }

    public mutating func reset() { states = [:] }
}
