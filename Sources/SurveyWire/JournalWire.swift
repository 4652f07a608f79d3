/// The request journals of both servers (`GET /__admin/requests`, `GET /__control/requests`).
public enum JournalWire {
    /// One answered request: when, what, how it ended, how long it took, and whom it concerned.
    public struct Entry: Codable, Sendable, Equatable {
        public var at: String
        public var method: String
        public var path: String
        public var status: Int
        public var durationMs: Double
        /// The participant (mock server) or device token (relay) the request concerned, when it names one.
        public var participant: String?
        public var token: String?

        enum CodingKeys: String, CodingKey {
            case at, method, path, status, durationMs = "duration_ms", participant, token
        }

        public init(at: String, method: String, path: String, status: Int, durationMs: Double, participant: String? = nil, token: String? = nil) {
            self.at = at
            self.method = method
            self.path = path
            self.status = status
            self.durationMs = durationMs
            self.participant = participant
            self.token = token
        }
    }

    /// The listing, newest first.
    public struct Listing: Codable, Sendable, Equatable {
        public var requests: [Entry]
        public init(requests: [Entry]) { self.requests = requests }
    }
}
