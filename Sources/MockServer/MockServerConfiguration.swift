import Foundation

/// Settings of a mock server process.
public struct MockServerConfiguration: Sendable {
    /// Where data is kept.
    public var store: StoreLocation
    /// PBKDF2 iterations for stored passwords (Beiwe: 1000).
    public var kdfIterations: Int
    /// The relay's base URL; nil disables pushes (each attempt is logged as a relay error).
    public var relayURL: String?
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

    public init(store: StoreLocation = .memory, kdfIterations: Int = 1000, relayURL: String? = nil, fcmProject: String = "mock-study",
                adminToken: String? = nil, maxBodyBytes: Int = 1 << 20, maxUploadBytes: Int = 8 << 20, tickInterval: Duration = .seconds(1)) {
        self.store = store
        self.kdfIterations = kdfIterations
        self.relayURL = relayURL
        self.fcmProject = fcmProject
        self.adminToken = adminToken
        self.maxBodyBytes = maxBodyBytes
        self.maxUploadBytes = maxUploadBytes
        self.tickInterval = tickInterval
    }
}
