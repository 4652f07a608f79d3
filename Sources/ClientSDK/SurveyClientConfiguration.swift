import Foundation

/// Everything a ``SurveyClient`` needs to act as one participant's device.
public struct SurveyClientConfiguration: Sendable {
    /// The device platform: decides the relay token shape, the `/ios` paths (401 on bad credentials) and upload encoding.
    public enum Platform: String, Sendable, Codable {
        case ios, android
    }

    /// Base URL of the study server (`http://127.0.0.1:PORT`).
    public var serverURL: String
    /// Base URL of the trio's push relay; nil when pushes come from elsewhere or not at all (``pushSource``).
    public var relayURL: String? {
        get { pushSource.relayURL }
        set { pushSource = newValue.map { .relay(url: Self.trimmed($0)) } ?? (pushSource == .external ? .external : .none) }
    }
    /// Where pushes come from: the relay (when ``relayURL`` is set), none, or the host app (``PushSource/external``).
    public var pushSource: PushSource
    /// Directory where the client keeps its state, stored surveys and outboxes. Created if missing.
    public var storageDirectory: URL
    /// The participant id the study gave the participant.
    public var patientID: String
    /// The temporary password the study gave the participant (plaintext; only its hash is sent).
    public var temporaryPassword: String
    /// The participant's new password, sent once at registration as Beiwe does. Defaults to the temporary one.
    public var newPassword: String?
    /// The platform the client presents as (`ios` or `android`): the mobile API's paths, its relay token's shape.
    public var platform: Platform
    /// App id used for the relay token and the telemetry path.
    public var appID: String
    /// The device's time zone (tz database name) sent at registration.
    public var timeZone: String
    /// A stable device id; one is generated and kept in storage when nil.
    public var deviceID: String?
    /// Events that make an `events` ping with reason `max_capacity` (Glean: 500).
    public var telemetryBatchSize: Int
    /// Telemetry collection and upload: opt-out, rate limit, quotas, maximum ping age, MMA heartbeat.
    public var telemetry: TelemetryConfiguration
    /// Compress pings with gzip (`Content-Encoding: gzip`), as Glean always does.
    public var gzipTelemetry: Bool
    /// The relay's keepalive interval. A stream on which nothing arrives for 2.5 times this is taken as dead
    /// (a connection lost without a FIN) and replaced.
    public var relayKeepalive: Duration
    /// How often a running client sends Beiwe's `/mobile-heartbeat` (nil: never). Beiwe's apps: every 5 minutes.
    public var heartbeatInterval: Duration?
    /// Where telemetry pings go (`POST <telemetryURL>/submit/...`, Glean's ingestion path). nil: pings stay queued on
    /// disk under their quotas and nothing is sent: a real Beiwe server has no such route. The trio's mock server serves
    /// it (`survey-cli up` and `TrioTesting` set it to the mock server's URL).
    public var telemetryURL: String?
    /// Where feature configuration comes from (`GET <featuresURL>/features/<app>`). nil: the cached copy or the app's
    /// defaults serve; nothing is fetched.
    public var featuresURL: String?
    /// `os_version` sent on every request. Beiwe stores it in a 16-character column (a longer one fails the whole
    /// registration with a 500), so the default is short: the host's `VERSION_ID` (e.g. `12`), else its kernel release.
    public var osVersion: String
    /// Events ``SurveyClient/events`` keeps for a consumer that has not read them yet; past it the oldest are dropped
    /// (an app that never reads them loses those, not its memory). At least 1.
    public var eventBufferLimit: Int = SurveyClient.eventBufferLimit

    /// A configuration for one participant's device: the study server, where pushes come from (`relayURL`, nil for
    /// none), where the client keeps its files, and the credentials the study handed out; the rest has defaults.
    public init(serverURL: String, relayURL: String?, storageDirectory: URL, patientID: String, temporaryPassword: String,
                newPassword: String? = nil, platform: Platform = .android, appID: String = "survey-sdk",
                timeZone: String = TimeZone.current.identifier, deviceID: String? = nil, telemetryBatchSize: Int = 500,
                gzipTelemetry: Bool = true, relayKeepalive: Duration = .seconds(25), heartbeatInterval: Duration? = .seconds(300),
                telemetry: TelemetryConfiguration = TelemetryConfiguration(), telemetryURL: String? = nil, featuresURL: String? = nil,
                osVersion: String? = nil, pushSource: PushSource? = nil) {
        self.pushSource = pushSource ?? relayURL.map { .relay(url: Self.trimmed($0)) } ?? .none
        self.telemetryURL = telemetryURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.featuresURL = featuresURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.osVersion = String((osVersion ?? HostOS.versionID).prefix(HostOS.maxVersionLength))
        self.serverURL = serverURL.hasSuffix("/") ? String(serverURL.dropLast()) : serverURL
        self.storageDirectory = storageDirectory
        self.patientID = patientID
        self.temporaryPassword = temporaryPassword
        self.newPassword = newPassword
        self.platform = platform
        self.appID = appID
        self.timeZone = timeZone
        self.deviceID = deviceID
        self.telemetryBatchSize = max(1, telemetryBatchSize)
        self.gzipTelemetry = gzipTelemetry
        self.relayKeepalive = relayKeepalive
        self.heartbeatInterval = heartbeatInterval
        self.telemetry = telemetry
    }
}

extension SurveyClientConfiguration {
    static func trimmed(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
}

/// What happens in a client, in order.
public enum SurveyClientEvent: Sendable, Equatable {
    /// Registration succeeded.
    case registered(studyID: String, scheduling: String, timeZone: String)
    /// A survey push arrived (after de-duplication) with its relay message id, and its Beiwe `sent_time` as the push
    /// gave it (`%Y-%m-%dT%H:%M:%S`, UTC: the study time the earliest of its surveys was due; empty when the push had none).
    case pushReceived(messageID: String, surveyIDs: [String], sentTime: String)
    /// A push that repeated one already handled was acked and ignored.
    case duplicateIgnored(messageID: String)
    /// The push stream went silent (nothing, not even a keepalive, for 2.5 keepalive periods) and is being replaced.
    case streamReconnecting(reason: String)
    /// A survey's spec was fetched and stored; it stays until its answers are accepted.
    case surveyAvailable(StoredSurvey)
    /// A pushed survey no longer exists on the server (`/download_survey` answered 404: deleted after the push went out).
    /// The push was acked; these occurrences will not be shown.
    case surveyWithdrawn(surveyID: String, scheduleUUIDs: [String])
    /// Answers were accepted by the server; the stored survey is gone.
    case submitted(surveyID: String, fileName: String)
    /// A telemetry ping (`events`, `baseline`, `deletion-request`) was accepted (or already known) by the server.
    case telemetrySent(documentID: String, events: Int, ping: String)
    /// Something failed; the client keeps going (retrying where it can).
    case error(SurveyClientError)
}

/// An SDK failure with a stable code.
public struct SurveyClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `registration_failed`, `push_token_required`, `invalid_credentials`, `transport`, `survey_not_found`,
    /// `upload_rejected`, `bad_push`, `not_registered`, `storage`, ...
    public var code: String
    /// Human-readable explanation.
    public var message: String
    /// HTTP status, when a server answered.
    public var status: Int?

    /// An error with its code, explanation and, when a server answered, the HTTP status.
    public init(code: String, message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    /// `code (status): message`.
    public var description: String { "\(code)\(status.map { " (\($0))" } ?? ""): \(message)" }
}

/// A snapshot of a client's storage.
public struct SurveyClientStatus: Sendable, Codable, Equatable {
    /// Whether the device has registered with the study server.
    public var registered: Bool
    /// The study the participant belongs to, once registered.
    public var studyID: String?
    /// The push token the server knows, if any.
    public var pushToken: String?
    /// Surveys stored and not yet submitted, oldest first.
    public var pendingSurveys: [String]
    /// Encrypted answer files not yet accepted by the server.
    public var uploadsWaiting: Int
    /// Telemetry pings not yet accepted.
    public var pingsWaiting: Int
    /// Recorded events not yet in a ping.
    public var eventsWaiting: Int
    /// Files moved aside because they could not be read.
    public var quarantined: [String]
    /// Pings deleted without upload, by reason: `max_age`, `count_quota`, `size_quota`, `too_large`, `rejected` (4xx).
    public var pingsDropped: [String: Int]
    /// Whether telemetry is collected and uploaded.
    public var uploadEnabled: Bool
    /// Received pushes' schedule uuids not yet confirmed to the server.
    public var receiptsWaiting: Int
    /// `server` (the server pushes) or `device` (the device schedules from `timings`); nil before registration.
    public var scheduling: String?

    enum CodingKeys: String, CodingKey {
        case registered, studyID = "study_id", pushToken = "push_token", pendingSurveys = "pending_surveys"
        case uploadsWaiting = "uploads_waiting", pingsWaiting = "pings_waiting", eventsWaiting = "events_waiting", quarantined
        case pingsDropped = "pings_dropped", uploadEnabled = "upload_enabled", receiptsWaiting = "receipts_waiting", scheduling
    }
}
