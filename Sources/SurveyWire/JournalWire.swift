/// The request journals of both servers (`GET /__admin/requests`, `GET /__control/requests`).
public enum JournalWire {
    /// One answered request: when, what, how it ended, how long it took, and whom it concerned.
    public struct Entry: Codable, Sendable, Equatable {
        /// When the request arrived (RFC 3339 with milliseconds).
        public var at: String
        /// The HTTP method.
        public var method: String
        /// The request path, without the query.
        public var path: String
        /// The status answered.
        public var status: Int
        /// How long the server took to answer, in milliseconds.
        public var durationMs: Double
        /// The participant (mock server) or device token (relay) the request concerned, when it names one.
        public var participant: String?
        /// The device token the request named, if any.
        public var token: String?
        /// The study the request concerned (mock server), when it names one or its participant's.
        public var study: String?

        enum CodingKeys: String, CodingKey {
            case at, method, path, status, durationMs = "duration_ms", participant, token, study
        }

        /// Creates the value from its fields.
        public init(at: String, method: String, path: String, status: Int, durationMs: Double, participant: String? = nil, token: String? = nil,
                    study: String? = nil) {
            self.study = study
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
        /// The entries, newest first.
        public var requests: [Entry]
        /// Creates the value from its fields.
        public init(requests: [Entry]) { self.requests = requests }
    }
}
