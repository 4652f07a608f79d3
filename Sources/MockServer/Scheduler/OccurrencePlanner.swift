import Foundation
import GRDB
import Scheduling
import SurveyCrypto
import SurveyWire

/// A survey with its schedules decoded and each entry's uuid key computed once.
struct PreparedSurvey: Sendable {
    let record: SurveyRecord
    let schedules: [Schedule]
    /// Canonical JSON of each schedule entry (part of the occurrence uuid).
    let keys: [String]
    /// The stored schedules did not decode (or an entry was out of range): the survey plans nothing.
    let quarantined: Bool

    init(_ record: SurveyRecord) {
        self.record = record
        // Decoded once: the list and whether it was usable come from the same decode.
        let decoded = try? WireJSON.decode([Schedule].self, from: record.schedules)
        schedules = decoded ?? []
        quarantined = decoded == nil
        keys = schedules.map { (try? WireJSON.encodeString($0)) ?? "\($0)" }
    }
}

/// What planning many participants at once shares: parsed zones and the study's intervention dates.
struct PlanningBatch {
    private var zones: [String: TimeZone] = [:]
    private var interventions: [String: [String: LocalDate]]?

    /// A batch that reads each participant's interventions on demand.
    init() {}

    /// A batch with every intervention date of a study loaded in one query.
    init(_ db: Database, studyID: String) throws {
        var all: [String: [String: LocalDate]] = [:]
        for row in try Row.fetchAll(db, sql: """
            SELECT i.patient_id, i.name, i.date FROM intervention i JOIN participant p ON p.patient_id = i.patient_id WHERE p.study_id = ?
            """, arguments: [studyID]) {
            if let date = LocalDate(row["date"] as String) { all[row["patient_id"], default: [:]][row["name"]] = date }
        }
        interventions = all
    }

    mutating func zone(_ name: String) -> TimeZone? {
        if let zone = zones[name] { return zone }
        let zone = TimeZone(identifier: name)
        zones[name] = zone
        return zone
    }

    mutating func context(_ db: Database, _ participant: ParticipantRecord) throws -> ParticipantContext? {
        guard let registeredAt = participant.registeredAt, let zoneName = participant.timezone, let zone = zone(zoneName) else { return nil }
        let dates: [String: LocalDate]
        if let interventions {
            dates = interventions[participant.patientId] ?? [:]
        } else {
            var found: [String: LocalDate] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, date FROM intervention WHERE patient_id = ?", arguments: [participant.patientId]) {
                if let date = LocalDate(row["date"] as String) { found[row["name"]] = date }
            }
            dates = found
        }
        return ParticipantContext(timeZone: zone, registeredAt: Date(timeIntervalSince1970: registeredAt), interventions: dates)
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

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A deterministic RFC 4122-shaped uuid (version 5 layout, SHA-256 based) for an occurrence.
    static func uuid(surveyID: String, scheduleKey: String, patientID: String, localTimestamp: String) -> String {
        var bytes = Array(SHA256.hash("\(surveyID)|\(scheduleKey)|\(patientID)|\(localTimestamp)").prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(45) }
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func context(_ db: Database, _ participant: ParticipantRecord) throws -> ParticipantContext? {
        var batch = PlanningBatch()
        return try batch.context(db, participant)
    }

    static func records(_ survey: PreparedSurvey, _ participant: ParticipantRecord, _ context: ParticipantContext,
                        after start: Date, through end: Date) -> [OccurrenceRecord] {
        OccurrenceCalculator.occurrences(of: survey.schedules, for: context, after: start, through: end).map { o in
            OccurrenceRecord(
                uuid: uuid(surveyID: survey.record.id, scheduleKey: survey.keys[o.scheduleIndex], patientID: participant.patientId,
                           localTimestamp: o.localTimestamp),
                studyId: survey.record.studyId, surveyId: survey.record.id, patientId: participant.patientId, scheduleIndex: o.scheduleIndex,
                dueAt: o.dueAt.timeIntervalSince1970, localTime: o.localTimestamp, status: "pending", pushUuid: nil)
        }
    }

    static func insert(_ db: Database, _ record: OccurrenceRecord) throws {
        try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO occurrence (uuid, study_id, survey_id, patient_id, schedule_index, due_at, local_time, status)
            VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')
            """).execute(arguments: [record.uuid, record.studyId, record.surveyId, record.patientId, record.scheduleIndex,
                                     record.dueAt, record.localTime])
    }

    /// Extends a participant's occurrences up to `through` (new rows only).
    static func extend(_ db: Database, participant: ParticipantRecord, surveys: [PreparedSurvey], through: Date,
                       batch: inout PlanningBatch) throws {
        guard let registeredAt = participant.registeredAt, let context = try batch.context(db, participant) else { return }
        let from = participant.materializedThrough.map { Date(timeIntervalSince1970: $0) }
            ?? Date(timeIntervalSince1970: registeredAt - 0.001)
        guard through > from else { return }
        for survey in surveys where !survey.record.deleted {
            for record in records(survey, participant, context, after: from, through: through) {
                try insert(db, record)
            }
        }
        try db.cachedStatement(sql: "UPDATE participant SET materialized_through = ? WHERE patient_id = ?")
            .execute(arguments: [through.timeIntervalSince1970, participant.patientId])
    }

    /// Recomputes one survey's pending occurrences for a participant after the survey or the participant's
    /// anchors changed: pending rows no longer produced are dropped; new rows are added only if due after
    /// `now` (a schedule added today does not fire for times already past); sent and expired rows are kept.
    static func recompute(_ db: Database, survey: PreparedSurvey, participant: ParticipantRecord, now: Date,
                          batch: inout PlanningBatch) throws {
        guard let registeredAt = participant.registeredAt, let through = participant.materializedThrough,
              let context = try batch.context(db, participant) else { return }
        let wanted = survey.record.deleted ? [] : records(survey, participant, context,
                                                          after: Date(timeIntervalSince1970: registeredAt - 0.001),
                                                          through: Date(timeIntervalSince1970: through))
        let wantedIDs = Set(wanted.map(\.uuid))
        let pending = try String.fetchAll(db.cachedStatement(sql: "SELECT uuid FROM occurrence WHERE survey_id = ? AND patient_id = ? AND status = 'pending'"),
                                          arguments: [survey.record.id, participant.patientId])
        for uuid in pending where !wantedIDs.contains(uuid) {
            try db.cachedStatement(sql: "DELETE FROM occurrence WHERE uuid = ?").execute(arguments: [uuid])
        }
        for record in wanted where record.dueAt > now.timeIntervalSince1970 {
            try insert(db, record)
        }
    }
}
