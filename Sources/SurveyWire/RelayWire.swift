/// Wire types of the push relay's device link and control API (PROTOCOL.md §3–§5).
public enum RelayWire {
    /// `POST /v1/devices` body.
    public struct DeviceRequest: Codable, Sendable, Equatable {
        /// `ios` or `android`.
        public var platform: String
        /// The application id the token is issued for (APNs topic, FCM package).
        public var appID: String
        enum CodingKeys: String, CodingKey { case platform, appID = "app_id" }
        /// Creates the value from its fields.
        public init(platform: String, appID: String) {
            self.platform = platform
            self.appID = appID
        }
    }

    /// `{"token"}`, answered by device creation and rotation.
    public struct TokenResponse: Codable, Sendable, Equatable {
        /// The device's push token (iOS: 64 hex characters; Android: an FCM-shaped registration token).
        public var token: String
        /// Creates the value from its fields.
        public init(token: String) { self.token = token }
    }

    /// `POST /v1/devices/{token}/ack` body.
    public struct AckRequest: Codable, Sendable, Equatable {
        /// Ids of the messages the device received; an acked message is never sent again.
        public var ids: [String]
        /// Creates the value from its fields.
        public init(ids: [String]) { self.ids = ids }
    }

    /// The `data` of a stream `push` event, and a pending entry in the control view.
    public struct Message: Codable, Sendable, Equatable {
        /// The message id (APNs `apns-id`, or the last part of FCM's `name`), which the device acks.
        public var id: String
        /// The provider body (APNs) or the FCM `data` object.
        public var payload: JSONValue
        /// APNs priority (10, 5 or 1), or 10/5 for FCM `high`/`normal`.
        public var priority: Int?
        /// `apns-collapse-id` or FCM `collapse_key`: a newer pending message with the same key replaces it.
        public var collapseID: String?
        /// `apns-push-type` (`alert` or `background`), when given.
        public var pushType: String?
        /// Milliseconds since the epoch when the relay accepted the message.
        public var sentAt: Int64
        enum CodingKeys: String, CodingKey {
            case id, payload, priority, collapseID = "collapse_id", pushType = "push_type", sentAt = "sent_at"
        }
        /// Creates the value from its fields.
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
        /// APNs' reason, such as `BadDeviceToken` or `Unregistered`.
        public var reason: String
        /// With `Unregistered`: when the token stopped being valid, in milliseconds since the epoch.
        public var timestamp: Int64?
        /// Creates the value from its fields.
        public init(reason: String, timestamp: Int64? = nil) {
            self.reason = reason
            self.timestamp = timestamp
        }
    }

    /// FCM v1 `messages:send` body: FCM's whole `Message` and `validate_only`.
    public struct FCMSendRequest: Codable, Sendable, Equatable {
        /// FCM's `message`.
        public struct Message: Codable, Sendable, Equatable {
            /// FCM's `notification`.
            public struct Notification: Codable, Sendable, Equatable {
                /// The notification's title.
                public var title: String?
                /// The notification's text.
                public var body: String?
                /// An image to show with it.
                public var image: String?
                /// Creates the value from its fields.
                public init(title: String?, body: String?, image: String? = nil) {
                    self.title = title
                    self.body = body
                    self.image = image
                }
            }
            /// FCM's `android` options.
            public struct Android: Codable, Sendable, Equatable {
                /// How long FCM keeps an undelivered message, such as `3600s`.
                public var ttl: String?
                /// A newer pending message with the same key replaces it.
                public var collapseKey: String?
                /// `high` or `normal`.
                public var priority: String?
                /// Data for Android devices: overrides `message.data` for them.
                public var data: [String: String]?
                /// The Android notification (`title`, `body`, `icon`, ...): overrides `message.notification`'s fields.
                public var notification: JSONValue?
                enum CodingKeys: String, CodingKey { case ttl, collapseKey = "collapse_key", priority, data, notification }
                /// Creates the value from its fields.
                public init(ttl: String? = nil, collapseKey: String? = nil, priority: String? = nil, data: [String: String]? = nil,
                            notification: JSONValue? = nil) {
                    self.ttl = ttl
                    self.collapseKey = collapseKey
                    self.priority = priority
                    self.data = data
                    self.notification = notification
                }
            }
            /// FCM's `apns` options: what an iOS device receives.
            public struct APNS: Codable, Sendable, Equatable {
                /// APNs request headers (`apns-priority`, `apns-push-type`, `apns-collapse-id`, `apns-expiration`, ...).
                public var headers: [String: String]?
                /// The APNs payload (`aps` and custom keys).
                public var payload: JSONValue?
                /// Creates the value from its fields.
                public init(headers: [String: String]? = nil, payload: JSONValue? = nil) {
                    self.headers = headers
                    self.payload = payload
                }
            }
            /// The device's registration token.
            public var token: String?
            /// A topic (`news`, or `/topics/news`): every device subscribed to it.
            public var topic: String?
            /// A condition over topics (`'a' in topics && !('b' in topics)`).
            public var condition: String?
            /// A Firebase installation ID (the relay takes a device token here).
            public var fid: String?
            /// String key-value pairs delivered to the app.
            public var data: [String: String]?
            /// A notification for the system to show, if any.
            public var notification: Notification?
            /// Android-specific options.
            public var android: Android?
            /// APNs-specific options.
            public var apns: APNS?
            /// Web push options (accepted; the relay has no web devices).
            public var webpush: JSONValue?
            /// FCM options (`analytics_label`; accepted, not used).
            public var fcmOptions: JSONValue?
            enum CodingKeys: String, CodingKey {
                case token, topic, condition, fid, data, notification, android, apns, webpush, fcmOptions = "fcm_options"
            }
            /// Creates the value from its fields.
            public init(token: String?, data: [String: String]?, notification: Notification? = nil, android: Android? = nil,
                        apns: APNS? = nil, topic: String? = nil, condition: String? = nil, fid: String? = nil,
                        webpush: JSONValue? = nil, fcmOptions: JSONValue? = nil) {
                self.token = token
                self.data = data
                self.notification = notification
                self.android = android
                self.apns = apns
                self.topic = topic
                self.condition = condition
                self.fid = fid
                self.webpush = webpush
                self.fcmOptions = fcmOptions
            }
        }
        /// The message to send.
        public var message: Message
        /// Validate only: answered with a name, never stored or delivered (firebase-admin's `dry_run`).
        public var validateOnly: Bool?
        enum CodingKeys: String, CodingKey { case message, validateOnly = "validate_only" }
        /// Creates the value from its fields.
        public init(message: Message, validateOnly: Bool? = nil) {
            self.message = message
            self.validateOnly = validateOnly
        }
    }

    /// FCM v1 success body.
    public struct FCMSendResponse: Codable, Sendable, Equatable {
        /// `projects/{project}/messages/{id}`.
        public var name: String
        /// Creates the value from its fields.
        public init(name: String) { self.name = name }
    }

    /// FCM v1 error body.
    public struct FCMError: Codable, Sendable, Equatable {
        /// One entry of `details`: FCM's `FcmError` (an `errorCode`), or Google's `google.rpc.ErrorInfo` (a `reason`,
        /// its `domain` and `metadata`), which Google's client libraries read to refresh an expired access token.
        public struct Detail: Codable, Sendable, Equatable {
            /// `type.googleapis.com/google.firebase.fcm.v1.FcmError` or `type.googleapis.com/google.rpc.ErrorInfo`.
            public var type: String?
            /// FCM's error code, such as `UNREGISTERED` or `QUOTA_EXCEEDED` (an `FcmError`).
            public var errorCode: String?
            /// An `ErrorInfo`'s reason, such as `ACCESS_TOKEN_EXPIRED`.
            public var reason: String?
            /// An `ErrorInfo`'s domain (`googleapis.com`).
            public var domain: String?
            /// An `ErrorInfo`'s metadata (`service`, `method`).
            public var metadata: [String: String]?
            enum CodingKeys: String, CodingKey { case type = "@type", errorCode, reason, domain, metadata }
            /// An `FcmError` detail.
            public init(errorCode: String) {
                self.type = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
                self.errorCode = errorCode
            }
            /// A `google.rpc.ErrorInfo` detail, as Google's APIs add to authentication and permission errors.
            public init(errorInfo reason: String, method: String = "google.firebase.fcm.v1.FcmService.SendMessage") {
                type = "type.googleapis.com/google.rpc.ErrorInfo"
                self.reason = reason
                domain = "googleapis.com"
                metadata = ["service": "fcm.googleapis.com", "method": method]
            }
        }
        /// FCM's `error` object.
        public struct Body: Codable, Sendable, Equatable {
            /// The HTTP status.
            public var code: Int
            /// A readable message.
            public var message: String
            /// The gRPC-style status, such as `NOT_FOUND` or `INVALID_ARGUMENT`.
            public var status: String
            /// FCM's error details.
            public var details: [Detail]
        }
        /// The error.
        public var error: Body
        /// Creates the value from its fields.
        /// `errorCode` nil: no FCM detail (as in Google's own 401s).
        public init(code: Int, message: String, status: String, errorCode: String?) {
            error = Body(code: code, message: message, status: status, details: errorCode.map { [Detail(errorCode: $0)] } ?? [])
        }
        /// An error with the given details.
        public init(code: Int, message: String, status: String, details: [Detail]) {
            error = Body(code: code, message: message, status: status, details: details)
        }
    }

    /// `GET /__control/devices/{token}`.
    public struct DeviceView: Codable, Sendable, Equatable {
        /// The device's token.
        public var token: String
        /// `ios` or `android`.
        public var platform: String
        /// The application id the token was issued for.
        public var appID: String
        /// Whether an event stream is open now.
        public var connected: Bool
        /// False after the device was made unreachable (`PUT /__control/devices/{token}` with `{"reachable": false}`).
        public var reachable: Bool
        /// Messages not yet acked (stored, or delivered and awaiting an ack), oldest first.
        public var pending: [Message]
        /// Messages written to the device's streams so far.
        public var delivered: Int
        /// Messages the device acked so far.
        public var acked: Int
        /// Event streams opened for this token so far (a client that keeps reconnecting shows here).
        public var streamsOpened: Int?
        enum CodingKeys: String, CodingKey {
            case token, platform, appID = "app_id", connected, reachable, pending, delivered, acked, streamsOpened = "streams_opened"
        }
        /// Creates the value from its fields.
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
        /// `{"min", "max"}` in milliseconds.
        public typealias Range = MillisecondRange

        /// A provider outage: `status` answered for `seconds`.
        public struct Outage: Codable, Sendable, Equatable {
            /// What the provider APIs answer meanwhile (default 503).
            public var status: Int?
            /// How long the outage lasts, in seconds of relay time.
            public var seconds: Double
            /// Creates the value from its fields.
            public init(status: Int? = nil, seconds: Double) {
                self.status = status
                self.seconds = seconds
            }
        }

        /// The next `count` provider requests answer `status`, then the fault clears itself.
        public struct FailNext: Codable, Sendable, Equatable {
            /// How many requests fail.
            public var count: Int
            /// What they answer (400-599).
            public var status: Int
            /// Creates the value from its fields.
            public init(count: Int, status: Int) {
                self.count = count
                self.status = status
            }
        }

        /// Seed of the random choices (drops, duplicates, delays, reordering).
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
        /// The next provider requests fail, by count (PROTOCOL.md §8).
        public var failNext: FailNext?

        enum CodingKeys: String, CodingKey {
            case seed, token, dropRate = "drop_rate", duplicateRate = "duplicate_rate", delayMs = "delay_ms"
            case reorderWindow = "reorder_window", outage, blackhole, zombie, closeAll = "close_all", failNext = "fail_next"
        }

        /// The JSON keys the body may have (anything else is refused).
        public static let allowedKeys: Set<String> = ["seed", "token", "drop_rate", "duplicate_rate", "delay_ms", "reorder_window",
                                                      "outage", "blackhole", "zombie", "close_all", "fail_next"]

        /// Creates the value from its fields.
        public init(seed: UInt64? = nil, token: String? = nil, dropRate: Double? = nil, duplicateRate: Double? = nil, delayMs: Range? = nil,
                    reorderWindow: Int? = nil, outage: Outage? = nil, blackhole: Bool? = nil, zombie: Bool? = nil, closeAll: Bool? = nil,
                    failNext: FailNext? = nil) {
            self.failNext = failNext
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
