import Foundation

/// Settings of a mock server process.
public struct MockServerConfiguration: Sendable {
    /// Where data is kept.
    public var store: StoreLocation
    /// PBKDF2 iterations for stored passwords (Beiwe: 1000).
    public var kdfIterations: Int
    /// The relays' base URLs (`--relay-url`, repeatable); none disables pushes (each attempt is logged as a relay
    /// error). With several, each push goes to the relay whose node id its token carries (``RelayNode``).
    public var relayURLs: [String]
    /// The first relay URL (the only one in most setups).
    public var relayURL: String? {
        get { relayURLs.first }
        set { relayURLs = newValue.map { [$0] } ?? [] }
    }
    /// FCM project name used in the relay's FCM path.
    public var fcmProject: String
    /// Bearer token required on `/__admin` when set.
    public var adminToken: String?
    /// Body limit of ordinary requests (PROTOCOL.md: 1 MiB).
    public var maxBodyBytes: Int
    /// Body limit of `/upload` (PROTOCOL.md: 8 MiB).
    public var maxUploadBytes: Int
    /// How often real-time studies are checked for due occurrences.
    public var tickInterval: Duration
    /// Failed password checks one participant may have per minute before the mobile API answers 429; nil = no limit.
    public var maxFailedLogins: Int?
    /// Telemetry kept at most (bytes of stored ping bodies); past it `/submit` answers 507 and clients keep their pings.
    public var maxTelemetryBytes: Int
    /// How the mobile API answers: `strict` (helpful refusals) or `beiwe` (as the real server does).
    public var profile: ServerProfile
    /// A Google service-account JSON file (`--fcm-service-account`) whose key signs the FCM v1 token requests under
    /// `--profile beiwe`; nil = a service account fetched from each relay (`/__control/fcm/service-account.json`).
    public var fcmServiceAccountFile: String?

    public init(store: StoreLocation = .memory, kdfIterations: Int = 1000, relayURL: String? = nil, fcmProject: String = "mock-study",
                adminToken: String? = nil, maxBodyBytes: Int = 1 << 20, maxUploadBytes: Int = 8 << 20, tickInterval: Duration = .seconds(1),
                maxFailedLogins: Int? = nil, maxTelemetryBytes: Int = 512 << 20, profile: ServerProfile = .strict,
                relayURLs: [String] = [], fcmServiceAccountFile: String? = nil) {
        self.profile = profile
        self.fcmServiceAccountFile = fcmServiceAccountFile
        self.maxFailedLogins = maxFailedLogins
        self.maxTelemetryBytes = maxTelemetryBytes
        self.store = store
        self.kdfIterations = kdfIterations
        self.relayURLs = relayURLs.isEmpty ? (relayURL.map { [$0] } ?? []) : relayURLs
        self.fcmProject = fcmProject
        self.adminToken = adminToken
        self.maxBodyBytes = maxBodyBytes
        self.maxUploadBytes = maxUploadBytes
        self.tickInterval = tickInterval
    }
}
