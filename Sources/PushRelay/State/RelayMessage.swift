import SurveyWire

/// A message held by the relay for one device, and where it is in its lifecycle.
struct RelayMessage: Sendable, Codable {
    enum Phase: String, Sendable, Codable {
        /// Accepted while the device was not connected; waiting for a connection.
        case stored
        /// Written to a stream; waiting for an ack (sent again on reconnect).
        case delivered
    }

    var id: String
    var payload: JSONValue
    var priority: Int?
    var collapseID: String?
    var pushType: String?
    /// Relay-clock milliseconds when accepted.
    var sentAt: Int64
    /// Relay-clock milliseconds after which it is never delivered; nil = never expires.
    var expiresAt: Int64?
    var phase: Phase
    /// Times written to a stream (first delivery counts in `delivered`; later ones are redeliveries).
    var deliveries = 0
    /// An FCM send's delivery to an iOS device, used instead of the fields above when the token is one (the relay
    /// learns the platform only from the token). Resolved when the message is accepted; never stored.
    var forApple: Variant?

    /// What a message is for one platform.
    struct Variant: Sendable {
        var payload: JSONValue
        var priority: Int?
        var collapseID: String?
        var pushType: String?
        var expiresAt: Int64?
    }

    enum CodingKeys: String, CodingKey {
        case id, payload, priority, collapseID, pushType, sentAt, expiresAt, phase, deliveries
    }

    /// The message as `platform` receives it.
    func resolved(for platform: Platform) -> RelayMessage {
        var message = self
        if platform == .ios, let apple = forApple {
            message.payload = apple.payload
            message.priority = apple.priority
            message.collapseID = apple.collapseID
            message.pushType = apple.pushType
            message.expiresAt = apple.expiresAt
        }
        message.forApple = nil
        return message
    }

    var wire: RelayWire.Message {
        RelayWire.Message(id: id, payload: payload, priority: priority, collapseID: collapseID, pushType: pushType, sentAt: sentAt)
    }

    func isExpired(at now: Int64) -> Bool {
        if let expiresAt { return now > expiresAt }
        return false
    }
}

/// One line of the per-message trace (`GET /__control/trace`).
struct TraceEntry: Sendable, Codable, Equatable {
    var messageID: String
    var token: String
    /// `accepted`, `stored`, `delivered`, `acked`, `expired`, `dropped`.
    var event: String
    var at: Int64
    var detail: String?

    enum CodingKeys: String, CodingKey { case messageID = "message_id", token, event, at, detail }
}
