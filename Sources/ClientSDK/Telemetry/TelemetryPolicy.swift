import Foundation

/// How a client collects and uploads telemetry. The defaults are Glean's (reference §4.3–§4.4), plus a maximum
/// ping age that Glean lacks.
public struct TelemetryConfiguration: Sendable, Equatable {
    /// The app's current choice to collect and upload, passed at every start as Glean's `initialize(uploadEnabled:)`.
    /// When false, nothing is recorded and only a `deletion-request` ping is ever sent. A value different from the
    /// last one stored (by a start or by ``SurveyClient/setUploadEnabled(_:)``) takes effect at ``SurveyClient/start()``:
    /// turning it off then sends the deletion request (`at_init`), turning it on starts a new client id.
    public var uploadEnabled: Bool
    /// Events in the open log that trigger an `events` ping with reason `max_capacity` (Glean: 500). The smaller of this
    /// and ``SurveyClientConfiguration/telemetryBatchSize`` applies (this one used to be ignored).
    public var maxEvents: Int
    /// Pings uploaded per ``rateInterval`` at most (Glean: 15 per 60 s); further pings wait for the window to end.
    public var pingsPerInterval: Int
    /// The window ``pingsPerInterval`` counts over (Glean: 60 s).
    public var rateInterval: Duration
    /// Pending pings kept at most; the oldest beyond it are deleted (Glean: 500). Deletion requests are exempt.
    public var maxPendingPings: Int
    /// Bytes of pending pings kept at most; the oldest beyond it are deleted (Glean: 50 MiB).
    public var maxPendingBytes: Int
    /// A ping not uploaded within this time is deleted and counted (`max_age`); Glean retries forever.
    public var maxPingAge: Duration
    /// Largest upload body, after gzip (Glean: 1 MiB); a larger ping is deleted and counted (`too_large`).
    public var maxPingBodyBytes: Int
    /// MMA session heartbeat while the app is in the foreground (Leanplum: every 15 minutes).
    public var sessionHeartbeat: Duration?

    /// Glean's defaults unless given.
    public init(uploadEnabled: Bool = true, maxEvents: Int = 500, pingsPerInterval: Int = 15, rateInterval: Duration = .seconds(60),
                maxPendingPings: Int = 500, maxPendingBytes: Int = 50 * 1024 * 1024, maxPingAge: Duration = .seconds(30 * 86_400),
                maxPingBodyBytes: Int = 1024 * 1024, sessionHeartbeat: Duration? = .seconds(15 * 60)) {
        self.uploadEnabled = uploadEnabled
        self.maxEvents = max(1, maxEvents)
        self.pingsPerInterval = max(1, pingsPerInterval)
        self.rateInterval = rateInterval
        self.maxPendingPings = max(1, maxPendingPings)
        self.maxPendingBytes = max(1, maxPendingBytes)
        self.maxPingAge = maxPingAge
        self.maxPingBodyBytes = max(1, maxPingBodyBytes)
        self.sessionHeartbeat = sessionHeartbeat
    }
}

/// Glean's upload rate limiter: a fixed window that opens at the first upload and resets once `interval` has passed;
/// when `limit` uploads were made in the current window, the caller waits for the rest of it (milliseconds honoured,
/// unlike Glean's iOS uploader, which sleeps whole seconds: bug B21).
struct PingRateLimiter: Sendable {
    let limit: Int
    let interval: Duration
    private var windowStart: ContinuousClock.Instant?
    private var count = 0

    init(limit: Int, interval: Duration) {
        self.limit = limit
        self.interval = interval
    }

    /// Takes one upload slot at `now`; returns nil when the upload may go, else how long to wait.
    mutating func take(at now: ContinuousClock.Instant) -> Duration? {
        if let start = windowStart, now - start <= interval {
            if count >= limit { return interval - (now - start) }
            count += 1
            return nil
        }
        windowStart = now
        count = 1
        return nil
    }
}

/// Which pending pings the quotas and the maximum age remove (Glean's `size_quota` / `count_quota` walk, newest to
/// oldest, plus our `max_age`). Pure.
enum PingQuota {
    struct Entry: Equatable {
        var id: String
        var bytes: Int
        var createdMillis: Int64
    }

    /// The ids to delete from `pings`, each with its reason. Newest pings are kept first.
    static func overflow(_ pings: [Entry], nowMillis: Int64, configuration: TelemetryConfiguration) -> [(id: String, reason: String)] {
        let maxAgeMillis = Int64(configuration.maxPingAge.components.seconds) * 1000
        var removed: [(id: String, reason: String)] = []
        var count = 0
        var bytes = 0
        for ping in pings.sorted(by: { ($0.createdMillis, $0.id) > ($1.createdMillis, $1.id) }) {
            if nowMillis - ping.createdMillis > maxAgeMillis {
                removed.append((ping.id, "max_age"))
                continue
            }
            count += 1
            bytes += ping.bytes
            if bytes > configuration.maxPendingBytes {
                removed.append((ping.id, "size_quota"))
            } else if count > configuration.maxPendingPings {
                removed.append((ping.id, "count_quota"))
            }
        }
        return removed
    }
}
