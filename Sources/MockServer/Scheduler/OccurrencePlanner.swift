import Foundation
import GRDB
import Scheduling
import SurveyCrypto
import SurveyWire

/// Time zones by name, parsed once per batch.
struct ZoneCache {
    private var zones: [String: TimeZone] = [:]
    mutating func zone(_ name: String) -> TimeZone? {
        if let zone = zones[name] { return zone }
        let zone = TimeZone(identifier: name)
        zones[name] = zone
        return zone
    }
}

/// Turns survey schedules into persisted occurrence rows with stable uuids.
///
/// The uuid of an occurrence is derived from (survey, schedule entry, participant, local due time), so
/// recomputing after an edit finds the rows already there: a sent occurrence is never sent again, and a
/// schedule entry that did not change keeps its pending rows.
enum OccurrencePlanner {
    /// How far ahead of a study's clock occurrences are materialized (so the admin API can list the next ones).
    static let horizon: TimeInterval = 8 * 86400

    /// A deterministic RFC 4122-shaped uuid (version 5 layout, SHA-256 based) for an occurrence.
    static func uuid(surveyID: String, schedule: Schedule, patientID: String, localTimestamp: String) -> String {
        let scheduleKey = (try? WireJSON.encodeString(schedule)) ?? "\(schedule)"
        var bytes = Array(SHA256.hash("\(surveyID)|\(scheduleKey)|\(patientID)|\(localTimestamp)").prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    static func context(_ db: Database, _ participant: ParticipantRecord, zones: inout ZoneCache) throws -> ParticipantContext? {
        guard let registeredAt = participant.registeredAt, let zoneName = participant.timezone,
              let zone = zones.zone(zoneName) else { return nil }
        var interventions: [String: LocalDate] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, date FROM intervention WHERE patient_id = ?", arguments: [participant.patientId]) {
            if let date = LocalDate(row["date"] as String) { interventions[row["name"]] = date }
        }
        return ParticipantContext(timeZone: zone, registeredAt: Date(timeIntervalSince1970: registeredAt), interventions: interventions)
    }

    static func records(_ survey: SurveyRecord, _ participant: ParticipantRecord, _ context: ParticipantContext,
                        after start: Date, through end: Date) -> [OccurrenceRecord] {
        let schedules = survey.scheduleList
        return OccurrenceCalculator.occurrences(of: schedules, for: context, after: start, through: end).map { o in
            OccurrenceRecord(
                uuid: uuid(surveyID: survey.id, schedule: schedules[o.scheduleIndex], patientID: participant.patientId,
                           localTimestamp: o.localTimestamp),
                studyId: survey.studyId, surveyId: survey.id, patientId: participant.patientId, scheduleIndex: o.scheduleIndex,
                dueAt: o.dueAt.timeIntervalSince1970, localTime: o.localTimestamp, status: "pending", pushUuid: nil)
        }
    }

    static func context(_ db: Database, _ participant: ParticipantRecord) throws -> ParticipantContext? {
        var zones = ZoneCache()
        return try context(db, participant, zones: &zones)
    }

    /// Extends a participant's occurrences up to `through` (new rows only).
    static func extend(_ db: Database, participant: ParticipantRecord, surveys: [SurveyRecord], through: Date) throws {
        var zones = ZoneCache()
        try extend(db, participant: participant, surveys: surveys, through: through, zones: &zones)
    }

    /// Extends a participant's occurrences up to `through` (new rows only), reusing parsed time zones.
    static func extend(_ db: Database, participant: ParticipantRecord, surveys: [SurveyRecord], through: Date, zones: inout ZoneCache) throws {
        guard let registeredAt = participant.registeredAt, let context = try context(db, participant, zones: &zones) else { return }
        let from = participant.materializedThrough.map { Date(timeIntervalSince1970: $0) }
            ?? Date(timeIntervalSince1970: registeredAt - 0.001)
        guard through > from else { return }
        for survey in surveys where !survey.deleted {
            for record in records(survey, participant, context, after: from, through: through) {
                try record.insert(db, onConflict: .ignore)
            }
        }
        try db.execute(sql: "UPDATE participant SET materialized_through = ? WHERE patient_id = ?",
                       arguments: [through.timeIntervalSince1970, participant.patientId])
    }

    /// Recomputes one survey's pending occurrences for a participant after the survey or the participant's
    /// anchors changed: pending rows no longer produced are dropped; new rows are added only if due after
    /// `now` (a schedule added today does not fire for times already past); sent and expired rows are kept.
    static func recompute(_ db: Database, survey: SurveyRecord, participant: ParticipantRecord, now: Date) throws {
        guard let registeredAt = participant.registeredAt, let through = participant.materializedThrough,
              let context = try context(db, participant) else { return }
        let wanted = survey.deleted ? [] : records(survey, participant, context,
                                                   after: Date(timeIntervalSince1970: registeredAt - 0.001),
                                                   through: Date(timeIntervalSince1970: through))
        let wantedIDs = Set(wanted.map(\.uuid))
        let pending = try String.fetchAll(db, sql: "SELECT uuid FROM occurrence WHERE survey_id = ? AND patient_id = ? AND status = 'pending'",
                                          arguments: [survey.id, participant.patientId])
        for uuid in pending where !wantedIDs.contains(uuid) {
            try db.execute(sql: "DELETE FROM occurrence WHERE uuid = ?", arguments: [uuid])
        }
        for record in wanted where record.dueAt > now.timeIntervalSince1970 {
            try record.insert(db, onConflict: .ignore)
        }
    }
}
