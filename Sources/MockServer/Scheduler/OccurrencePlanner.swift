import Foundation
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

/// What planning many participants at once shares: parsed zones and the intervention dates read for them.
struct PlanningBatch {
    private var zones: [String: TimeZone] = [:]
    /// Patient id → intervention name → `YYYY-MM-DD`.
    private let interventions: [String: [String: String]]

    init(interventions: [String: [String: String]]) {
        self.interventions = interventions
    }

    mutating func zone(_ name: String) -> TimeZone? {
        if let zone = zones[name] { return zone }
        let zone = TimeZone(identifier: name)
        zones[name] = zone
        return zone
    }

    /// The participant's planning context, or nil before registration (or with an unusable zone).
    mutating func context(_ participant: ParticipantRecord) -> ParticipantContext? {
        guard let registeredAt = participant.registeredAt, let zoneName = participant.timezone, let zone = zone(zoneName) else { return nil }
        var dates: [String: LocalDate] = [:]
        for (name, text) in interventions[participant.patientId] ?? [:] {
            if let date = LocalDate(text) { dates[name] = date }
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

    /// Extends a participant's occurrences up to `through` (new rows only).
    static func extend(participant: ParticipantRecord, surveys: [PreparedSurvey], through: Date, batch: inout PlanningBatch,
                       plan: inout PlanChanges) {
        guard let registeredAt = participant.registeredAt, let context = batch.context(participant) else { return }
        let from = participant.materializedThrough.map { Date(timeIntervalSince1970: $0) }
            ?? Date(timeIntervalSince1970: registeredAt - 0.001)
        guard through > from else { return }
        for survey in surveys where !survey.record.deleted {
            plan.inserts += records(survey, participant, context, after: from, through: through)
        }
        plan.materialized.append((participant.patientId, through.timeIntervalSince1970))
    }

    /// Recomputes one survey's pending occurrences for a participant after the survey or the participant's
    /// anchors changed: pending rows (`pending`) no longer produced are dropped; new rows are added only if due
    /// after `now` (a schedule added today does not fire for times already past); sent and expired rows are kept.
    static func recompute(survey: PreparedSurvey, participant: ParticipantRecord, pending: [String], now: Date,
                          batch: inout PlanningBatch, plan: inout PlanChanges) {
        guard let registeredAt = participant.registeredAt, let through = participant.materializedThrough,
              let context = batch.context(participant) else { return }
        let wanted = survey.record.deleted ? [] : records(survey, participant, context,
                                                          after: Date(timeIntervalSince1970: registeredAt - 0.001),
                                                          through: Date(timeIntervalSince1970: through))
        let wantedIDs = Set(wanted.map(\.uuid))
        plan.deletes += pending.filter { !wantedIDs.contains($0) }
        plan.inserts += wanted.filter { $0.dueAt > now.timeIntervalSince1970 }
    }
}
