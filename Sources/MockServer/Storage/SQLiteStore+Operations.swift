import Foundation
import GRDB
import ServerSupport
import SurveyWire

// The ``Store`` operations in SQLite's dialect. Reads use the pool's readers (the per-request lookups batched,
// `readNow`); writes go through the group commit.
extension SQLiteStore {
    // MARK: Mobile API

    func participantAndStudy(_ patientID: String) async throws -> (ParticipantRecord, StudyRecord)? {
        // Every mobile request runs these two lookups: cached statements, read inline. Without a common snapshot the
        // study is read just after the participant, as if the request had come a moment later; a study deleted in
        // between (its participants go with it) answers nil, as it would have then.
        try await readNow { db in
            guard let p = try ParticipantRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM participant WHERE patient_id = ?"),
                                                         arguments: [patientID]),
                  let s = try StudyRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM study WHERE id = ?"), arguments: [p.studyId])
            else { return nil }
            return (p, s)
        }
    }

    func recordDevice(_ report: DeviceReport, patientID: String) async throws {
        guard report.hasFields || !report.notificationUUIDs.isEmpty else { return }
        try await write { db in try Self.recordDevice(db, report, patientID: patientID) }
    }

    /// The same, inside a transaction the caller already holds.
    static func recordDevice(_ db: Database, _ report: DeviceReport, patientID: String) throws {
        if report.hasFields {
            // One fixed (cached) statement: an absent field keeps the stored value.
            let statement = try db.cachedStatement(sql: """
                UPDATE participant SET version_code = COALESCE(?, version_code), version_name = COALESCE(?, version_name),
                    os_version = COALESCE(?, os_version), device_status_report = COALESCE(?, device_status_report),
                    reported_timezone = COALESCE(?, reported_timezone), device_id = COALESCE(?, device_id)
                WHERE patient_id = ?
                """)
            try statement.execute(arguments: [report.versionCode, report.versionName, report.osVersion, report.deviceStatusReport,
                                              report.timezone, report.deviceID, patientID])
        }
        for uuid in report.notificationUUIDs {
            try db.execute(sql: "INSERT INTO notification_report (patient_id, uuid, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                           arguments: [patientID, uuid, report.at])
        }
    }

    func register(_ r: Registration, report: DeviceReport) async throws -> String? {
        try await write { db -> String? in
            if let token = r.pushToken, try String.fetchOne(
                db.cachedStatement(sql: "SELECT patient_id FROM participant WHERE push_token = ? AND patient_id != ?"),
                arguments: [token, r.patientID]) != nil {
                throw StoreError.tokenInUse
            }
            // The first registration fixes the time zone; every registration replaces password, device and token.
            // (SET expressions see the row's old values, so `registered_at IS NULL` means "first time".)
            let update = try db.cachedStatement(sql: """
                UPDATE participant SET
                    timezone = CASE WHEN registered_at IS NULL THEN ?1 ELSE timezone END,
                    timezone_fallback = CASE WHEN registered_at IS NULL THEN ?2 ELSE timezone_fallback END,
                    registered_at = COALESCE(registered_at, ?3), last_registered_at = ?3,
                    password_record = ?4, device_id = ?5, os = ?6, device_info = ?7, push_token = ?8,
                    token_unregistered_at = NULL, retry_after = NULL, retry_count = 0
                WHERE patient_id = ?9
                RETURNING timezone
                """)
            guard let row = try Row.fetchOne(update, arguments: [r.timezone, r.timezoneIsFallback, r.at, r.passwordRecord, r.deviceID,
                                                                 r.os, r.deviceInfo, r.pushToken, r.patientID])
            else { return nil }
            try Self.recordDevice(db, report, patientID: r.patientID)
            return (row[0] as String?) ?? r.timezone
        }
    }

    func setPushToken(_ token: String, patientID: String) async throws {
        try await write { db in
            if try String.fetchOne(db, sql: "SELECT patient_id FROM participant WHERE push_token = ? AND patient_id != ?",
                                   arguments: [token, patientID]) != nil {
                throw StoreError.tokenInUse
            }
            try db.execute(sql: "UPDATE participant SET push_token = ?, token_unregistered_at = NULL, retry_after = NULL, retry_count = 0 WHERE patient_id = ?",
                           arguments: [token, patientID])
        }
    }

    func liveSurveys(studyID: String) async throws -> [SurveyRecord] {
        try await read { db in
            try SurveyRecord.filter(sql: "study_id = ? AND deleted = 0", arguments: [studyID]).order(sql: "created_at, id").fetchAll(db)
        }
    }

    func allSurveys(studyID: String) async throws -> [SurveyRecord] {
        try await read { db in try SurveyRecord.filter(sql: "study_id = ?", arguments: [studyID]).order(sql: "created_at, id").fetchAll(db) }
    }

    func survey(_ id: String) async throws -> SurveyRecord? {
        try await read { db in try SurveyRecord.fetchOne(db, key: id) }
    }

    func surveyExists(_ surveyID: String, studyID: String) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM survey WHERE id = ? AND study_id = ?)", arguments: [surveyID, studyID]) ?? false
        }
    }

    func storeUpload(_ u: UploadRecord, submission: SubmissionRecord?) async throws {
        try await write { db in
            try db.execute(sql: """
                INSERT INTO upload (patient_id, file_name, stream, received_at, lines, bad_lines, content)
                VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, arguments: [u.patientID, u.fileName, u.stream, u.receivedAt, u.lines, u.badLines, u.content])
            if let s = submission {
                try db.execute(sql: """
                    INSERT INTO submission (study_id, patient_id, survey_id, file_name, received_at, answers)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """, arguments: [s.studyId, s.patientId, s.surveyId, s.fileName, s.receivedAt, s.answers])
            }
        }
    }

    func recordHeartbeat(patientID: String, at: Double, message: String?) async throws {
        try await write { db in
            try db.execute(sql: "INSERT INTO heartbeat (patient_id, at, message) VALUES (?, ?, ?)", arguments: [patientID, at, message])
            try db.execute(sql: "UPDATE participant SET last_heartbeat_at = ? WHERE patient_id = ?", arguments: [at, patientID])
        }
    }

    func interventionDates(patientID: String) async throws -> [String: String] {
        try await read { db in
            var found: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, date FROM intervention WHERE patient_id = ?", arguments: [patientID]) {
                found[row["name"]] = row["date"]
            }
            return found
        }
    }

    // MARK: Telemetry and features

    func insertPing(_ record: TelemetryRecord) async throws -> Bool {
        try await write { db -> Bool in
            try record.insert(db, onConflict: .ignore)
            return db.changesCount > 0
        }
    }

    func telemetryBytes() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(length(body)), 0) FROM telemetry") ?? 0 }
    }

    func pings(clientID: String?, ping: String?, since: Double?) async throws -> [TelemetryRecord] {
        try await read { db in
            try TelemetryRecord.filter(sql: "(?1 IS NULL OR client_id = ?1) AND (?2 IS NULL OR ping = ?2) AND (?3 IS NULL OR received_at >= ?3)",
                                       arguments: [clientID, ping, since]).order(sql: "seq").fetchAll(db)
        }
    }

    func pingSequences(clientID: String?, range: ClosedRange<Int>) async throws -> [(String, String, Int)] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT client_id, ping, seq FROM (
                    SELECT client_id, ping, CAST(json_extract(body, '$.ping_info.seq') AS INTEGER) AS seq FROM telemetry
                    WHERE (? IS NULL OR client_id = ?) AND json_valid(body))
                WHERE seq BETWEEN ? AND ? ORDER BY client_id, ping, seq
                """, arguments: [clientID, clientID, range.lowerBound, range.upperBound])
                .map { row -> (String, String, Int) in (row["client_id"], row["ping"], row["seq"]) }
        }
    }

    func setFeature(appID: String, featureID: String, config: String, at: Double) async throws {
        try await write { db in
            try db.execute(sql: """
                INSERT INTO feature (app_id, feature_id, config, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (app_id, feature_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at
                """, arguments: [appID, featureID, config, at])
        }
    }

    func deleteFeature(appID: String, featureID: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM feature WHERE app_id = ? AND feature_id = ?", arguments: [appID, featureID])
            return db.changesCount > 0
        }
    }

    func features(appID: String) async throws -> [(String, String)] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT feature_id, config FROM feature WHERE app_id = ? ORDER BY feature_id", arguments: [appID])
                .map { row -> (String, String) in (row["feature_id"], row["config"]) }
        }
    }

    // MARK: Admin API

    func study(_ id: String) async throws -> StudyRecord? {
        try await read { db in try StudyRecord.fetchOne(db, key: id) }
    }

    func createStudy(_ record: StudyRecord, interventions: [String]) async throws {
        try await write { db in
            try record.insert(db)
            for name in interventions {
                try db.execute(sql: "INSERT INTO study_intervention (study_id, name) VALUES (?, ?)", arguments: [record.id, name])
            }
        }
    }

    func updateStudy(_ record: StudyRecord) async throws {
        try await write { db in try record.update(db) }
    }

    func studyInterventions(_ studyID: String) async throws -> [String] {
        try await read { db in
            try String.fetchAll(db, sql: "SELECT name FROM study_intervention WHERE study_id = ? ORDER BY name", arguments: [studyID])
        }
    }

    func addStudyIntervention(_ studyID: String, name: String) async throws {
        try await write { db in
            try db.execute(sql: "INSERT INTO study_intervention (study_id, name) VALUES (?, ?) ON CONFLICT DO NOTHING", arguments: [studyID, name])
        }
    }

    func stats(studyID id: String) async throws -> AdminWire.StudyStats {
        try await read { db in
            AdminWire.StudyStats(
                participants: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM participant WHERE study_id = ?", arguments: [id]) ?? 0,
                registered: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM participant WHERE study_id = ? AND registered_at IS NOT NULL", arguments: [id]) ?? 0,
                occurrencesPending: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM occurrence WHERE study_id = ? AND status = 'pending'", arguments: [id]) ?? 0,
                pushesSent: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push WHERE study_id = ? AND status = 'sent'", arguments: [id]) ?? 0,
                submissions: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM submission WHERE study_id = ?", arguments: [id]) ?? 0)
        }
    }

    func insertParticipants(_ records: [ParticipantRecord]) async throws {
        try await write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO participant (patient_id, study_id, password_record, private_key) VALUES (?, ?, ?, ?)")
            for record in records {
                do {
                    try insert.execute(arguments: [record.patientId, record.studyId, record.passwordRecord, record.privateKey])
                } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
                    throw StoreError.participantExists(record.patientId)
                }
            }
        }
    }

    func participant(_ id: String) async throws -> ParticipantRecord? {
        try await read { db in try ParticipantRecord.fetchOne(db, key: id) }
    }

    func setInterventionDate(patientID: String, name: String, date: String) async throws {
        try await write { db in
            try db.execute(sql: """
                INSERT INTO intervention (patient_id, name, date) VALUES (?, ?, ?)
                ON CONFLICT (patient_id, name) DO UPDATE SET date = excluded.date
                """, arguments: [patientID, name, date])
        }
    }

    func insertSurvey(_ record: SurveyRecord) async throws {
        try await write { db in try record.insert(db) }
    }

    func updateSurvey(_ record: SurveyRecord) async throws {
        try await write { db in try record.update(db) }
    }

    func deleteSurvey(_ id: String) async throws {
        try await write { db in try db.execute(sql: "UPDATE survey SET deleted = 1 WHERE id = ?", arguments: [id]) }
    }

    func occurrences(studyID: String, patientID: String?, all: Bool) async throws -> [OccurrenceRecord] {
        try await read { db in
            try OccurrenceRecord.filter(sql: "study_id = ? AND (? OR status = 'pending') AND (? IS NULL OR patient_id = ?)",
                                        arguments: [studyID, all, patientID, patientID])
                .order(sql: "due_at, patient_id, survey_id").fetchAll(db)
        }
    }

    func pushes(studyID: String, patientID: String?) async throws -> [PushRecord] {
        try await read { db in
            try PushRecord.filter(sql: "study_id = ? AND (? IS NULL OR patient_id = ?)", arguments: [studyID, patientID, patientID])
                .order(sql: "seq").fetchAll(db)
        }
    }

    func push(uuid: String) async throws -> (PushRecord, [String])? {
        try await read { db -> (PushRecord, [String])? in
            guard let record = try PushRecord.filter(sql: "uuid = ?", arguments: [uuid]).fetchOne(db) else { return nil }
            let confirmed = try String.fetchAll(db, sql: "SELECT uuid FROM notification_report WHERE patient_id = ?", arguments: [record.patientId])
            return (record, confirmed)
        }
    }

    func notificationReceipts(studyID: String) async throws -> Set<String> {
        try await read { db in
            Set(try String.fetchAll(db, sql: """
                SELECT r.patient_id || ' ' || r.uuid FROM notification_report r JOIN participant p ON p.patient_id = r.patient_id
                WHERE p.study_id = ?
                """, arguments: [studyID]))
        }
    }

    func submissions(studyID: String, patientID: String?) async throws -> [SubmissionRecord] {
        try await read { db in
            try SubmissionRecord.filter(sql: "study_id = ? AND (? IS NULL OR patient_id = ?)", arguments: [studyID, patientID, patientID])
                .order(sql: "seq").fetchAll(db)
        }
    }

    func wipe() async throws {
        try await writer.write { db in
            for table in Schema.tables { try db.execute(sql: "DELETE FROM \(table)") }
        }
    }

    // MARK: Scheduling

    func realTimeStudies() async throws -> [String] {
        try await read { db in try String.fetchAll(db, sql: "SELECT id FROM study WHERE clock_mode = 'real' AND scheduling = 'server'") }
    }

    func registeredParticipants(studyID: String) async throws -> [ParticipantRecord] {
        try await read { db in
            try ParticipantRecord.filter(sql: "study_id = ? AND registered_at IS NOT NULL", arguments: [studyID]).fetchAll(db)
        }
    }

    func participantsToExtend(studyID: String, horizon: Double) async throws -> [ParticipantRecord] {
        try await read { db in
            try ParticipantRecord.filter(sql: """
                study_id = ? AND registered_at IS NOT NULL AND retired = 0
                AND (materialized_through IS NULL OR materialized_through < ?)
                """, arguments: [studyID, horizon]).fetchAll(db)
        }
    }

    func studyInterventionDates(studyID: String) async throws -> [String: [String: String]] {
        try await read { db in
            var all: [String: [String: String]] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT i.patient_id, i.name, i.date FROM intervention i JOIN participant p ON p.patient_id = i.patient_id WHERE p.study_id = ?
                """, arguments: [studyID]) {
                all[row["patient_id"], default: [:]][row["name"]] = row["date"]
            }
            return all
        }
    }

    func pendingOccurrences(surveyID: String, patientIDs: [String]) async throws -> [String: [String]] {
        let wanted = Set(patientIDs)
        return try await read { db in
            var found: [String: [String]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT patient_id, uuid FROM occurrence WHERE survey_id = ? AND status = 'pending'",
                                        arguments: [surveyID]) {
                let patient: String = row["patient_id"]
                if wanted.contains(patient) { found[patient, default: []].append(row["uuid"]) }
            }
            return found
        }
    }

    func applyPlan(_ plan: PlanChanges) async throws {
        guard !plan.isEmpty else { return }
        try await write { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM occurrence WHERE uuid = ? AND status = 'pending'")
            for uuid in plan.deletes { try delete.execute(arguments: [uuid]) }
            let insert = try db.cachedStatement(sql: """
                INSERT INTO occurrence (uuid, study_id, survey_id, patient_id, schedule_index, due_at, local_time, status)
                VALUES (?, ?, ?, ?, ?, ?, ?, 'pending') ON CONFLICT DO NOTHING
                """)
            for r in plan.inserts {
                try insert.execute(arguments: [r.uuid, r.studyId, r.surveyId, r.patientId, r.scheduleIndex, r.dueAt, r.localTime])
            }
            let mark = try db.cachedStatement(sql: "UPDATE participant SET materialized_through = ? WHERE patient_id = ?")
            for (patientID, through) in plan.materialized { try mark.execute(arguments: [through, patientID]) }
        }
    }

    func dueMoments(studyID: String, after: Double, through: Double) async throws -> [Double] {
        try await read { db in
            try Double.fetchAll(db, sql: """
                SELECT DISTINCT due_at FROM occurrence WHERE study_id = ? AND status = 'pending' AND due_at > ? AND due_at <= ? ORDER BY due_at
                """, arguments: [studyID, after, through])
        }
    }

    func nextRetryMoment(studyID: String, after: Double, through: Double) async throws -> Double? {
        try await read { db in
            try Double.fetchOne(db, sql: """
                SELECT MIN(p.retry_after) FROM participant p
                WHERE p.study_id = ? AND p.retired = 0 AND p.push_token IS NOT NULL AND p.token_unregistered_at IS NULL
                AND p.retry_after > ? AND p.retry_after <= ?
                AND EXISTS (SELECT 1 FROM occurrence o WHERE o.patient_id = p.patient_id AND o.status = 'pending' AND o.due_at <= p.retry_after)
                """, arguments: [studyID, after, through])
        }
    }

    func dueWork(studyID: String, at t: Double, patientID: String?) async throws -> [DueWork] {
        try await read { db in
            let rows = try OccurrenceRecord.filter(sql: "study_id = ? AND status = 'pending' AND due_at <= ? AND (? IS NULL OR patient_id = ?)",
                                                   arguments: [studyID, t, patientID, patientID])
                .order(sql: "patient_id, due_at").fetchAll(db)
            guard !rows.isEmpty else { return [] }
            let people = try ParticipantRecord.fetchAll(db, sql: """
                SELECT * FROM participant WHERE retired = 0 AND patient_id IN
                (SELECT DISTINCT patient_id FROM occurrence WHERE study_id = ? AND status = 'pending' AND due_at <= ?
                 AND (? IS NULL OR patient_id = ?))
                """, arguments: [studyID, t, patientID, patientID])
            return DueWork.group(rows, people: people)
        }
    }

    func nextResendMoment(studyID: String, after: Double, through: Double) async throws -> Double? {
        try await read { db in
            try Double.fetchOne(db, sql: """
                SELECT MIN(o.resend_at) FROM occurrence o JOIN participant p ON p.patient_id = o.patient_id
                WHERE o.study_id = ? AND o.status = 'sent' AND o.resend_at > ? AND o.resend_at <= ?
                AND p.retired = 0 AND p.push_token IS NOT NULL AND p.token_unregistered_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM notification_report r WHERE r.patient_id = o.patient_id AND lower(r.uuid) = o.uuid)
                """, arguments: [studyID, after, through])
        }
    }

    func dueResends(studyID: String, at t: Double, patientID: String?) async throws -> [DueWork] {
        try await read { db in
            let rows = try OccurrenceRecord.fetchAll(db, sql: """
                SELECT o.* FROM occurrence o WHERE o.study_id = ? AND o.status = 'sent' AND o.resend_at <= ?
                AND (? IS NULL OR o.patient_id = ?)
                AND NOT EXISTS (SELECT 1 FROM notification_report r WHERE r.patient_id = o.patient_id AND lower(r.uuid) = o.uuid)
                ORDER BY o.patient_id, o.due_at
                """, arguments: [studyID, t, patientID, patientID])
            guard !rows.isEmpty else { return [] }
            let people = try ParticipantRecord.fetchAll(db, sql: "SELECT * FROM participant WHERE retired = 0 AND patient_id IN (SELECT value FROM json_each(?))",
                                                        arguments: [String(decoding: try JSONEncoder().encode(Array(Set(rows.map(\.patientId)))), as: UTF8.self)])
            return DueWork.group(rows, people: people)
        }
    }

    func recordFiring(_ outcomes: [FiringOutcome], at t: Double) async throws {
        try await write { db in
            let mark = try db.cachedStatement(sql: "UPDATE occurrence SET status = ?, push_uuid = ? WHERE uuid = ?")
            let resend = try db.cachedStatement(sql: "UPDATE occurrence SET resend_at = ? WHERE uuid = ?")
            for outcome in outcomes {
                for record in outcome.records { try record.insert(db) }
                for (occurrence, push) in outcome.sent { try mark.execute(arguments: ["sent", push, occurrence]) }
                for (occurrence, push) in outcome.expired { try mark.execute(arguments: ["expired", push, occurrence]) }
                for (occurrence, at) in outcome.resendAt { try resend.execute(arguments: [at, occurrence]) }
                guard let patientID = outcome.records.first?.patientId else { continue }
                switch outcome.update {
                case .none: break
                case .delivered:
                    try db.execute(sql: "UPDATE participant SET retry_after = NULL, retry_count = 0 WHERE patient_id = ?", arguments: [patientID])
                case .unregistered(let token):
                    try db.execute(sql: "UPDATE participant SET token_unregistered_at = ? WHERE patient_id = ? AND push_token = ?",
                                   arguments: [t, patientID, token])
                case .backOff(let until, let count):
                    try db.execute(sql: "UPDATE participant SET retry_after = ?, retry_count = ? WHERE patient_id = ?",
                                   arguments: [until, count, patientID])
                }
            }
        }
    }

    func withStudyLock<T: Sendable>(_ studyID: String, wait: Bool, _ body: @Sendable () async throws -> T) async throws -> T? {
        // One process owns a SQLite file: there is no other instance to skip for.
        try await locks.withLock(studyID, body)
    }

    func withParticipantLock<T: Sendable>(studyID: String, patientID: String, _ body: @Sendable () async throws -> T) async throws -> T {
        try await locks.withParticipantLock(studyID: studyID, patientID: patientID, body)
    }
}

extension DueWork {
    /// Groups pending rows (sorted by participant) with their active participants, by patient id.
    static func group(_ rows: [OccurrenceRecord], people: [ParticipantRecord]) -> [DueWork] {
        let byID = Dictionary(people.map { ($0.patientId, $0) }, uniquingKeysWith: { first, _ in first })
        var groups: [String: [OccurrenceRecord]] = [:]
        for row in rows { groups[row.patientId, default: []].append(row) }
        return groups.keys.sorted().compactMap { id in byID[id].map { DueWork(participant: $0, occurrences: groups[id]!) } }
    }
}
