/// A telemetry ping (PROTOCOL.md §1.5), Glean-shaped.
public struct TelemetryPing: Codable, Sendable, Equatable {
    /// `ping_info`: the ping's sequence number and collection window.
    public struct PingInfo: Codable, Sendable, Equatable {
        /// The ping's sequence number for its name, counting from 0 per client.
        public var seq: Int
        /// When the ping's collection window began (ISO 8601 with offset).
        public var startTime: String
        /// When the ping was assembled.
        public var endTime: String
        /// Why the ping was sent, if given (such as `active` or `inactive`).
        public var reason: String?
        enum CodingKeys: String, CodingKey { case seq, startTime = "start_time", endTime = "end_time", reason }
        /// Creates the value from its fields.
        public init(seq: Int, startTime: String, endTime: String, reason: String?) {
            self.seq = seq
            self.startTime = startTime
            self.endTime = endTime
            self.reason = reason
        }
    }

    /// `client_info`: who sent the ping. Glean's pipeline requires the build, version, OS, SDK, architecture and
    /// first-run-date fields (the last two are checked by ``checkRanges()``, so that pings queued by an older SDK still
    /// decode); the client id (custom pings may leave it out) and the locale (Glean's Python SDK cannot set it) are
    /// optional (PROTOCOL.md §8).
    public struct ClientInfo: Codable, Sendable, Equatable {
        /// The client's stable id (a UUID), when the ping carries one.
        public var clientID: String?
        /// The application's build identifier.
        public var appBuild: String
        /// The application's user-visible version.
        public var appDisplayVersion: String
        /// The operating system's name.
        public var os: String
        /// The operating system's version.
        public var osVersion: String
        /// The client's locale, such as `en-US`, if known.
        public var locale: String?
        /// The telemetry SDK's version.
        public var telemetrySDKBuild: String
        /// The CPU architecture (`x86_64`, `aarch64`); required by the server (``checkRanges()``).
        public var architecture: String?
        /// The client's first run date, as Glean writes it (`2026-11-25+00:00`); required by the server (``checkRanges()``).
        public var firstRunDate: String?
        enum CodingKeys: String, CodingKey {
            case clientID = "client_id", appBuild = "app_build", appDisplayVersion = "app_display_version", os
            case osVersion = "os_version", locale, telemetrySDKBuild = "telemetry_sdk_build", architecture, firstRunDate = "first_run_date"
        }
        /// Creates the value from its fields.
        public init(clientID: String?, appBuild: String, appDisplayVersion: String, os: String, osVersion: String,
                    locale: String?, telemetrySDKBuild: String, architecture: String? = nil, firstRunDate: String? = nil) {
            self.clientID = clientID
            self.appBuild = appBuild
            self.appDisplayVersion = appDisplayVersion
            self.os = os
            self.osVersion = osVersion
            self.locale = locale
            self.telemetrySDKBuild = telemetrySDKBuild
            self.architecture = architecture
            self.firstRunDate = firstRunDate
        }
    }

    /// One recorded event.
    public struct Event: Codable, Sendable, Equatable {
        /// Milliseconds since the ping's start.
        public var timestamp: Int64
        /// The event's category.
        public var category: String
        /// The event's name within its category.
        public var name: String
        /// String extras, if any.
        public var extra: [String: String]?
        /// Creates the value from its fields.
        public init(timestamp: Int64, category: String, name: String, extra: [String: String]? = nil) {
            self.timestamp = timestamp
            self.category = category
            self.name = name
            self.extra = extra
        }
    }

    /// Sequence and collection window.
    public var pingInfo: PingInfo
    /// Who sent the ping.
    public var clientInfo: ClientInfo
    /// The recorded events, oldest first (empty when the ping has none: Glean leaves `events` out then).
    public var events: [Event]
    /// Metrics by type and name, as Glean nests them, if any.
    public var metrics: JSONValue?

    enum CodingKeys: String, CodingKey { case pingInfo = "ping_info", clientInfo = "client_info", events, metrics }

    /// Reads a ping; a ping without `events` has none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        pingInfo = try container.decode(PingInfo.self, forKey: .pingInfo)
        clientInfo = try container.decode(ClientInfo.self, forKey: .clientInfo)
        events = try container.decodeIfPresent([Event].self, forKey: .events) ?? []
        metrics = try container.decodeIfPresent(JSONValue.self, forKey: .metrics)
    }

    /// Creates the value from its fields.
    public init(pingInfo: PingInfo, clientInfo: ClientInfo, events: [Event], metrics: JSONValue? = nil) {
        self.pingInfo = pingInfo
        self.clientInfo = clientInfo
        self.events = events
        self.metrics = metrics
    }
}
