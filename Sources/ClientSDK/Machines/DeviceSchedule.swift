import Foundation
import Scheduling
import SurveyWire

/// The schedule an old-style study leaves to the device (every real Beiwe study): when the 30-second loop downloads
/// the survey list again, and which occurrences of the surveys' `timings` fell due since the last evaluation. Pure:
/// the client keeps the times in its saved state and performs what this decides.
enum DeviceSchedule {
    /// How often the device's loop looks at its schedule.
    static let tickInterval: Duration = .seconds(30)
    /// How often the survey list is downloaded when the server gave no `check_for_new_surveys_frequency_seconds`.
    static let defaultFrequencySeconds = 3600

    /// What one tick of the loop does.
    enum Tick: Sendable, Equatable {
        /// Download the list (`/download_surveys`), then evaluate.
        case download
        /// Evaluate the timings of the list held.
        case evaluate
    }

    /// A download is due once `frequencySeconds` passed since the last (at once when there was none).
    static func tick(now: Date, lastCheck: Date?, frequencySeconds: Int?) -> Tick {
        guard let lastCheck else { return .download }
        let frequency = TimeInterval(frequencySeconds ?? defaultFrequencySeconds)
        return now.timeIntervalSince(lastCheck) >= frequency ? .download : .evaluate
    }

    /// The occurrences of one survey that fell due: the spec as stored (without its timings: the occurrence says when
    /// it was due), the occurrence ids not shown before, and Beiwe's `sent_time` of the last.
    struct Firing: Sendable, Equatable {
        var entry: SurveyEntry
        var uuids: [String]
        var sentTime: String
    }

    /// The id of an occurrence the device fired itself.
    static func occurrenceID(surveyID: String, localTimestamp: String) -> String { "local-\(surveyID)-\(localTimestamp)" }

    /// The occurrences in `(from, through]` of each survey's weekly `timings`, in `zone`, leaving out ids in `seen`.
    /// Nothing when the window is empty (a device clock that went back fires nothing until it passes `from` again).
    static func due(_ surveys: [SurveyEntry], zone: TimeZone, after from: Date, through: Date, seen: Set<String>) -> [Firing] {
        guard through > from else { return [] }
        let context = ParticipantContext(timeZone: zone, registeredAt: .distantPast)
        return surveys.compactMap { entry in
            let schedules = OccurrenceCalculator.weeklySchedules(fromTimings: entry.timings ?? [])
            let due = OccurrenceCalculator.occurrences(of: schedules, for: context, after: from, through: through)
            let uuids = due.map { occurrenceID(surveyID: entry.id, localTimestamp: $0.localTimestamp) }.filter { !seen.contains($0) }
            guard let last = due.last, !uuids.isEmpty else { return nil }
            var spec = entry
            spec.timings = nil
            return Firing(entry: spec, uuids: uuids, sentTime: WireTime.beiweSentTime(last.dueAt))
        }
    }
}
