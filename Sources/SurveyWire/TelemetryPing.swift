/// A telemetry ping (PROTOCOL.md §1.5), Glean-shaped.
public struct TelemetryPing: Codable, Sendable, Equatable {
    public struct PingInfo: Codable, Sendable, Equatable {
        public var seq: Int
        public var startTime: String
        public var endTime: String
        public var reason: String?
        enum CodingKeys: String, CodingKey { case seq, startTime = "start_time", endTime = "end_time", reason }
        public init(seq: Int, startTime: String, endTime: String, reason: String?) {
            self.seq = seq
            self.startTime = startTime
            self.endTime = endTime
            self.reason = reason
        }
    }

    public struct ClientInfo: Codable, Sendable, Equatable {
        public var clientID: String
        public var appBuild: String
        public var appDisplayVersion: String
        public var os: String
        public var osVersion: String
        public var locale: String
        public var telemetrySDKBuild: String
        enum CodingKeys: String, CodingKey {
            case clientID = "client_id", appBuild = "app_build", appDisplayVersion = "app_display_version", os
            case osVersion = "os_version", locale, telemetrySDKBuild = "telemetry_sdk_build"
        }
        public init(clientID: String, appBuild: String, appDisplayVersion: String, os: String, osVersion: String,
                    locale: String, telemetrySDKBuild: String) {
            self.clientID = clientID
            self.appBuild = appBuild
            self.appDisplayVersion = appDisplayVersion
            self.os = os
            self.osVersion = osVersion
            self.locale = locale
            self.telemetrySDKBuild = telemetrySDKBuild
        }
    }

    public struct Event: Codable, Sendable, Equatable {
        /// Milliseconds since the ping's start.
        public var timestamp: Int64
        public var category: String
        public var name: String
        public var extra: [String: String]?
        public init(timestamp: Int64, category: String, name: String, extra: [String: String]? = nil) {
            self.timestamp = timestamp
            self.category = category
            self.name = name
            self.extra = extra
        }
    }

    public var pingInfo: PingInfo
    public var clientInfo: ClientInfo
    public var events: [Event]
    public var metrics: JSONValue?

    enum CodingKeys: String, CodingKey { case pingInfo = "ping_info", clientInfo = "client_info", events, metrics }

    public init(pingInfo: PingInfo, clientInfo: ClientInfo, events: [Event], metrics: JSONValue? = nil) {
        self.pingInfo = pingInfo
        self.clientInfo = clientInfo
        self.events = events
        self.metrics = metrics
    }
}
