/// Wire types of the push relay's device link and control API (PROTOCOL.md §3–§5).
public enum RelayWire {
    /// `POST /v1/devices` body.
    public struct DeviceRequest: Codable, Sendable, Equatable {
        /// `ios` or `android`.
        public var platform: String
        public var appID: String
        enum CodingKeys: String, CodingKey { case platform, appID = "app_id" }
        public init(platform: String, appID: String) {
            self.platform = platform
            self.appID = appID
        }
    }

    /// `{"token"}`, answered by device creation and rotation.
    public struct TokenResponse: Codable, Sendable, Equatable {
        public var token: String
        public init(token: String) { self.token = token }
    }

    /// `POST /v1/devices/{token}/ack` body.
    public struct AckRequest: Codable, Sendable, Equatable {
        public var ids: [String]
        public init(ids: [String]) { self.ids = ids }
    }

    /// The `data` of a stream `push` event, and a pending entry in the control view.
    public struct Message: Codable, Sendable, Equatable {
        public var id: String
        /// The provider body (APNs) or the FCM `data` object.
        public var payload: JSONValue
        public var priority: Int?
        public var collapseID: String?
        public var pushType: String?
        /// Milliseconds since the epoch when the relay accepted the message.
        public var sentAt: Int64
        enum CodingKeys: String, CodingKey {
            case id, payload, priority, collapseID = "collapse_id", pushType = "push_type", sentAt = "sent_at"
        }
        public init(id: String, payload: JSONValue, priority: Int?, collapseID: String?, pushType: String?, sentAt: Int64) {
            self.id = id
            self.payload = payload
            self.priority = priority
            self.collapseID = collapseID
            self.pushType = pushType
            self.sentAt = sentAt
        }

        /// The message as `WireJSON` encodes it (sorted keys, absent fields left out), written directly: the relay
        /// writes one per delivery.
        public var compactText: String {
            var object: [String: JSONValue] = ["id": .string(id), "payload": payload, "sent_at": .number(Double(sentAt))]
            if let priority { object["priority"] = .number(Double(priority)) }
            if let collapseID { object["collapse_id"] = .string(collapseID) }
            if let pushType { object["push_type"] = .string(pushType) }
            return JSONValue.object(object).compactText
        }
    }

    /// APNs error body: `{"reason"}` plus `timestamp` (ms) for 410.
    public struct APNsError: Codable, Sendable, Equatable {
        public var reason: String
        public var timestamp: Int64?
        public init(reason: String, timestamp: Int64? = nil) {
            self.reason = reason
            self.timestamp = timestamp
        }
    }

    /// FCM v1 `messages:send` body.
    public struct FCMSendRequest: Codable, Sendable, Equatable {
        public struct Message: Codable, Sendable, Equatable {
            public struct Notification: Codable, Sendable, Equatable {
                public var title: String?
                public var body: String?
                public init(title: String?, body: String?) {
                    self.title = title
                    self.body = body
                }
            }
            public struct Android: Codable, Sendable, Equatable {
                public var ttl: String?
                public var collapseKey: String?
                public var priority: String?
                enum CodingKeys: String, CodingKey { case ttl, collapseKey = "collapse_key", priority }
                public init(ttl: String? = nil, collapseKey: String? = nil, priority: String? = nil) {
                    self.ttl = ttl
                    self.collapseKey = collapseKey
                    self.priority = priority
                }
            }
            public var token: String?
            public var data: [String: String]?
            public var notification: Notification?
            public var android: Android?
            public init(token: String?, data: [String: String]?, notification: Notification? = nil, android: Android? = nil) {
                self.token = token
                self.data = data
                self.notification = notification
                self.android = android
            }
        }
        public var message: Message
        public init(message: Message) { self.message = message }
    }

    /// FCM v1 success body.
    public struct FCMSendResponse: Codable, Sendable, Equatable {
        public var name: String
        public init(name: String) { self.name = name }
    }

    /// FCM v1 error body.
    public struct FCMError: Codable, Sendable, Equatable {
        public struct Detail: Codable, Sendable, Equatable {
            public var type: String?
            public var errorCode: String
            enum CodingKeys: String, CodingKey { case type = "@type", errorCode }
            public init(errorCode: String) {
                self.type = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
                self.errorCode = errorCode
            }
        }
        public struct Body: Codable, Sendable, Equatable {
            public var code: Int
            public var message: String
            public var status: String
            public var details: [Detail]
        }
        public var error: Body
        public init(code: Int, message: String, status: String, errorCode: String) {
            error = Body(code: code, message: message, status: status, details: [Detail(errorCode: errorCode)])
        }
    }

    /// `GET /__control/devices/{token}`.
    public struct DeviceView: Codable, Sendable, Equatable {
        public var token: String
        public var platform: String
        public var appID: String
        public var connected: Bool
        public var reachable: Bool
        /// Messages not yet acked (stored, or delivered and awaiting an ack), oldest first.
        public var pending: [Message]
        public var delivered: Int
        public var acked: Int
        /// Event streams opened for this token so far (a client that keeps reconnecting shows here).
        public var streamsOpened: Int?
        enum CodingKeys: String, CodingKey {
            case token, platform, appID = "app_id", connected, reachable, pending, delivered, acked, streamsOpened = "streams_opened"
        }
        public init(token: String, platform: String, appID: String, connected: Bool, reachable: Bool,
                    pending: [Message], delivered: Int, acked: Int, streamsOpened: Int? = nil) {
            self.streamsOpened = streamsOpened
            self.token = token
            self.platform = platform
            self.appID = appID
            self.connected = connected
            self.reachable = reachable
            self.pending = pending
            self.delivered = delivered
            self.acked = acked
        }
    }
}

extension RelayWire {
    /// `PUT /__control/faults` body (PROTOCOL.md §5, plus `token`, `blackhole`, `zombie` and `close_all`). Every field is
    /// optional; a PUT replaces the faults of its scope (one device when `token` is set, else every device without its
    /// own), and `{}` clears them. Random choices come from a generator seeded with `seed`, so the same run of events
    /// gets the same faults.
    public struct Faults: Codable, Sendable, Equatable {
        public typealias Range = MillisecondRange

        public struct Outage: Codable, Sendable, Equatable {
            /// What the provider APIs answer meanwhile (default 503).
            public var status: Int?
            public var seconds: Double
            public init(status: Int? = nil, seconds: Double) {
                self.status = status
                self.seconds = seconds
            }
        }

        public var seed: UInt64?
        /// Only this device; nil = the global faults.
        public var token: String?
        /// Share of accepted pushes silently never delivered.
        public var dropRate: Double?
        /// Share of deliveries written to the stream twice.
        public var duplicateRate: Double?
        /// Each delivery waits a random time in this range (ms).
        public var delayMs: Range?
        /// Deliveries are held until this many are waiting (or 50 ms pass), then written in a shuffled order.
        public var reorderWindow: Int?
        /// The provider APIs answer `status` for `seconds`.
        public var outage: Outage?
        /// Streams open now stop receiving anything, keepalives included, without being closed (only a client's
        /// dead-stream timer notices). New streams work.
        public var blackhole: Bool?
        /// Sends are accepted (200) and never delivered.
        public var zombie: Bool?
        /// Closes every open stream now (a reconnect storm); not kept as a standing fault.
        public var closeAll: Bool?

        enum CodingKeys: String, CodingKey {
            case seed, token, dropRate = "drop_rate", duplicateRate = "duplicate_rate", delayMs = "delay_ms"
            case reorderWindow = "reorder_window", outage, blackhole, zombie, closeAll = "close_all"
        }

        public static let allowedKeys: Set<String> = ["seed", "token", "drop_rate", "duplicate_rate", "delay_ms", "reorder_window",
                                                      "outage", "blackhole", "zombie", "close_all"]

        public init(seed: UInt64? = nil, token: String? = nil, dropRate: Double? = nil, duplicateRate: Double? = nil, delayMs: Range? = nil,
                    reorderWindow: Int? = nil, outage: Outage? = nil, blackhole: Bool? = nil, zombie: Bool? = nil, closeAll: Bool? = nil) {
            self.seed = seed
            self.token = token
            self.dropRate = dropRate
            self.duplicateRate = duplicateRate
            self.delayMs = delayMs
            self.reorderWindow = reorderWindow
            self.outage = outage
            self.blackhole = blackhole
            self.zombie = zombie
            self.closeAll = closeAll
        }
    }
}
