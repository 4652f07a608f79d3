import Foundation
import Synchronization

/// `--max-failed-logins N`: a participant with N failed password checks within a minute is refused (429) until the
/// minute since the first of them has passed. Counts only participants that exist, so its memory is bounded by the
/// participant table; entries of a past window are dropped when they are next touched or swept.
final class LoginThrottle: Sendable {
    private struct Window {
        var start: TimeInterval
        var failures: Int
    }

    /// Failures allowed per participant per window; nil = no limit.
    let limit: Int?
    let window: TimeInterval = 60
    private let windows = Mutex<[String: Window]>([:])

    init(limit: Int?) { self.limit = limit }

    /// Seconds until `patientID` may try again, or nil when it may try now.
    func retryAfter(_ patientID: String, now: TimeInterval) -> Int? {
        guard let limit else { return nil }
        return windows.withLock { all -> Int? in
            guard let w = all[patientID] else { return nil }
            if now - w.start >= window {
                all[patientID] = nil
                return nil
            }
            return w.failures >= limit ? max(1, Int((w.start + window - now).rounded(.up))) : nil
        }
    }

    /// Records a failed check.
    func failed(_ patientID: String, now: TimeInterval) {
        guard limit != nil else { return }
        windows.withLock { all in
            if all.count > 100_000 { all = all.filter { now - $0.value.start < window } }
            if var w = all[patientID], now - w.start < window {
                w.failures += 1
                all[patientID] = w
            } else {
                all[patientID] = Window(start: now, failures: 1)
            }
        }
    }

    /// Forgets a participant's failures (after a successful check).
    func succeeded(_ patientID: String) {
        guard limit != nil else { return }
        _ = windows.withLock { $0.removeValue(forKey: patientID) }
    }
}
