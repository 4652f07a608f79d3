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
