import Foundation
import Logging
import ServerSupport
import Synchronization

/// What every route of the mock server shares.
struct ServerContext: Sendable {
    let configuration: MockServerConfiguration
    let store: any Store
    let scheduler: SchedulerEngine
    let realNow: @Sendable () -> Date
    let bound: BoundAddress
    let metrics: ServerMetrics
    let keys = KeyCache()
    let faults = FaultTable()
    let logger: Logger
    /// `--max-failed-logins`: failed password checks per participant per minute before 429.
    let loginThrottle: LoginThrottle
    /// A password record at the server's PBKDF2 cost that no device hash matches: unknown participants are checked
    /// against it, so they take as long as a wrong password.
    let decoyPasswordRecord: String
    /// Bytes of telemetry stored, against `maxTelemetryBytes`.
    let telemetryBytes: TelemetryQuota
    /// `--profile beiwe`: the wall-clock second of each participant's last registration.
    let recentRegistrations = RecentRegistrations()
    /// The last requests answered (`GET /__admin/requests`).
    let journal = RequestJournal()
}

/// The wall-clock second each participant last registered in (only the current second matters, so the map is cleared
/// whenever the second changes: bounded by one second's registrations).
final class RecentRegistrations: Sendable {
    private let state = Mutex<(second: Int, patients: Set<String>)>((0, []))

    /// Records a registration; false when the participant already registered in this second.
    func record(_ patientID: String, second: Int) -> Bool {
        state.withLock { state in
            if state.second != second { state = (second, []) }
            return state.patients.insert(patientID).inserted
        }
    }
}

/// How many bytes of ping bodies the store holds (read once at start, then counted as pings are stored or wiped).
final class TelemetryQuota: Sendable {
    private let used: Mutex<Int>
    let limit: Int

    init(used: Int, limit: Int) {
        self.used = Mutex(used)
        self.limit = limit
    }

    /// Reserves `bytes`; false when that would pass the limit.
    func reserve(_ bytes: Int) -> Bool {
        used.withLock { total in
            guard total + bytes <= limit else { return false }
            total += bytes
            return true
        }
    }

    /// Gives back a reservation whose ping was not stored (a duplicate, or a failed write).
    func release(_ bytes: Int) { used.withLock { $0 = max(0, $0 - bytes) } }

    /// After a wipe.
    func reset() { used.withLock { $0 = 0 } }
}
