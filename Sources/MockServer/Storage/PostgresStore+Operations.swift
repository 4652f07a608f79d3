import Foundation
import PostgresNIO
import ServerSupport
import SurveyWire

// The ``Store`` operations in PostgreSQL's dialect. Bulk writes (occurrences, pushes, participants) send whole
// columns as arrays and insert them with `UNNEST`: one round trip per batch instead of one per row.
extension PostgresStore {
    // MARK: Mobile API

    func participantAndStudy(_ patientID: String) async throws -> (ParticipantRecord, StudyRecord)? {
        try await prepared(ParticipantAndStudyStatement(patientID: patientID)).first
    }

    func recordDevice(_ report: DeviceReport, patientID: String) async throws {
        guard report.hasFields || !report.notificationUUIDs.isEmpty else { return }
        // One statement (one round trip, its own transaction): absent fields keep their stored value.
        try await write("""
            WITH updated AS (
                UPDATE participant SET version_code = COALESCE(\(report.versionCode), version_code),
                    version_name = COALESCE(\(report.versionName), version_name), os_version = COALESCE(\(report.osVersion), os_version),
                    device_status_report = COALESCE(\(report.deviceStatusReport), device_status_report),
                    reported_timezone = COALESCE(\(report.timezone), reported_timezone), device_id = COALESCE(\(report.deviceID), device_id)
                WHERE patient_id = \(patientID) AND \(report.hasFields)
            )
            INSERT INTO notification_report (patient_id, uuid, at)
            SELECT \(patientID), u, \(report.at) FROM UNNEST(\(report.notificationUUIDs)::text[]) AS u
            ON CONFLICT DO NOTHING
            """)
    }

    func register(_ r: Registration, report: DeviceReport) async throws -> String? {
        let rows: [String?]
        do {
            rows = try await write(RegisterStatement(registration: r, report: report))
        } catch where PostgresStoreError.isUniqueViolation(error) {
            throw StoreError.tokenInUse
        }
        guard let zone = rows.first else { return nil }
        return zone ?? r.timezone
    }

    func setPushToken(_ token: String, patientID: String) async throws {
        do {
            try await write("""
                UPDATE participant SET push_token = \(token), token_unregistered_at = NULL, retry_after = NULL, retry_count = 0
                WHERE patient_id = \(patientID)
                """)
        } catch where PostgresStoreError.isUniqueViolation(error) {
            throw StoreError.tokenInUse
        }
    }

    func liveSurveys(studyID: String) async throws -> [SurveyRecord] {
        try await rows("SELECT * FROM survey WHERE study_id = \(studyID) AND NOT deleted ORDER BY created_at, id").map(SurveyRecord.init(pg:))
    }

    func allSurveys(studyID: String) async throws -> [SurveyRecord] {
        try await rows("SELECT * FROM survey WHERE study_id = \(studyID) ORDER BY created_at, id").map(SurveyRecord.init(pg:))
    }

    func survey(_ id: String) async throws -> SurveyRecord? {
        try await rows("SELECT * FROM survey WHERE id = \(id)").first.map(SurveyRecord.init(pg:))
    }

    func surveyExists(_ surveyID: String, studyID: String) async throws -> Bool {
        try await !rows("SELECT 1 FROM survey WHERE id = \(surveyID) AND study_id = \(studyID)").isEmpty
    }

    func storeUpload(_ u: UploadRecord, submission: SubmissionRecord?) async throws {
        try await transaction { connection in
            try await connection.query("""
                INSERT INTO upload (patient_id, file_name, stream, received_at, lines, bad_lines, content)
                VALUES (\(u.patientID), \(u.fileName), \(u.stream), \(u.receivedAt), \(u.lines), \(u.badLines), \(Data(u.content.utf8)))
                ON CONFLICT DO NOTHING
                """, logger: self.logger)
            if let s = submission {
                try await connection.query("""
                    INSERT INTO submission (study_id, patient_id, survey_id, file_name, received_at, answers)
                    VALUES (\(s.studyId), \(s.patientId), \(s.surveyId), \(s.fileName), \(s.receivedAt), \(s.answers))
                    ON CONFLICT DO NOTHING
                    """, logger: self.logger)
            }
        }
    }

    func recordHeartbeat(patientID: String, at: Double, message: String?) async throws {
        try await transaction { connection in
            try await connection.query("INSERT INTO heartbeat (patient_id, at, message) VALUES (\(patientID), \(at), \(message))", logger: self.logger)
            try await connection.query("UPDATE participant SET last_heartbeat_at = \(at) WHERE patient_id = \(patientID)", logger: self.logger)
        }
    }

    func interventionDates(patientID: String) async throws -> [String: String] {
        var found: [String: String] = [:]
        for row in try await rows("SELECT name, date FROM intervention WHERE patient_id = \(patientID)") {
            let (name, date) = try row.decode((String, String).self)
            found[name] = date
        }
        return found
    }

    // MARK: Telemetry and features

    func insertPing(_ r: TelemetryRecord) async throws -> Bool {
        try await !write("""
            INSERT INTO telemetry (document_id, app_id, ping, schema_version, client_id, received_at, body)
            VALUES (\(r.documentId), \(r.appId), \(r.ping), \(r.schemaVersion), \(r.clientId), \(r.receivedAt), \(r.body))
            ON CONFLICT DO NOTHING RETURNING seq
            """).isEmpty
    }

    func telemetryBytes() async throws -> Int {
        try await rows("SELECT COALESCE(SUM(octet_length(body)), 0)::bigint FROM telemetry").first?.decode(Int.self) ?? 0
    }

    func pings(clientID: String?, ping: String?, since: Double?) async throws -> [TelemetryRecord] {
        try await rows("""
            SELECT * FROM telemetry WHERE (\(clientID)::text IS NULL OR client_id = \(clientID))
            AND (\(ping)::text IS NULL OR ping = \(ping)) AND (\(since)::float8 IS NULL OR received_at >= \(since)) ORDER BY seq
            """).map(TelemetryRecord.init(pg:))
    }

    func pingSequences(clientID: String?, range: ClosedRange<Int>) async throws -> [(String, String, Int)] {
        // Bodies were checked as JSON when stored; a `seq` that is not a whole number is skipped, as on SQLite.
        try await rows("""
            SELECT client_id, ping, seq FROM (
                SELECT client_id, ping, CASE WHEN (body::jsonb #>> '{ping_info,seq}') ~ '^-?[0-9]{1,18}$'
                    THEN (body::jsonb #>> '{ping_info,seq}')::bigint END AS seq
                FROM telemetry WHERE \(clientID)::text IS NULL OR client_id = \(clientID)) s
            WHERE seq BETWEEN \(range.lowerBound) AND \(range.upperBound) ORDER BY client_id, ping, seq
            """).map { try $0.decode((String, String, Int).self) }
    }

    func setFeature(appID: String, featureID: String, config: String, at: Double) async throws {
        try await write("""
            INSERT INTO feature (app_id, feature_id, config, updated_at) VALUES (\(appID), \(featureID), \(config), \(at))
            ON CONFLICT (app_id, feature_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at
            """)
    }

    func deleteFeature(appID: String, featureID: String) async throws -> Bool {
        try await !write("DELETE FROM feature WHERE app_id = \(appID) AND feature_id = \(featureID) RETURNING 1").isEmpty
    }

    func features(appID: String) async throws -> [(String, String)] {
        try await rows("SELECT feature_id, config FROM feature WHERE app_id = \(appID) ORDER BY feature_id").map { try $0.decode((String, String).self) }
    }

    // MARK: Admin API

    func study(_ id: String) async throws -> StudyRecord? {
        try await rows("SELECT * FROM study WHERE id = \(id)").first.map { try StudyRecord(pg: $0) }
    }

    func createStudy(_ s: StudyRecord, interventions: [String]) async throws {
        try await transaction { connection in
            try await connection.query("""
                INSERT INTO study (id, name, timezone, scheduling, device_settings, max_delay_minutes, per_participant_keys, clock_mode,
                    frozen_at, private_key, created_at)
                VALUES (\(s.id), \(s.name), \(s.timezone), \(s.scheduling), \(s.deviceSettings), \(s.maxDelayMinutes), \(s.perParticipantKeys),
                    \(s.clockMode), \(s.frozenAt), \(s.privateKey), \(s.createdAt))
                """, logger: self.logger)
            if !interventions.isEmpty {
                try await connection.query(
                    "INSERT INTO study_intervention (study_id, name) SELECT \(s.id), n FROM UNNEST(\(interventions)::text[]) AS n",
                    logger: self.logger)
            }
        }
    }

    func updateStudy(_ s: StudyRecord) async throws {
        try await write("""
            UPDATE study SET name = \(s.name), timezone = \(s.timezone), scheduling = \(s.scheduling), device_settings = \(s.deviceSettings),
                max_delay_minutes = \(s.maxDelayMinutes), per_participant_keys = \(s.perParticipantKeys), clock_mode = \(s.clockMode),
                frozen_at = \(s.frozenAt)
            WHERE id = \(s.id)
            """)
    }

    func studyInterventions(_ studyID: String) async throws -> [String] {
        try await rows("SELECT name FROM study_intervention WHERE study_id = \(studyID) ORDER BY name").map { try $0.decode(String.self) }
    }

    func addStudyIntervention(_ studyID: String, name: String) async throws {
        try await write("INSERT INTO study_intervention (study_id, name) VALUES (\(studyID), \(name)) ON CONFLICT DO NOTHING")
    }

    func stats(studyID id: String) async throws -> AdminWire.StudyStats {
        let row = try await rows("""
            SELECT (SELECT COUNT(*) FROM participant WHERE study_id = \(id)),
                   (SELECT COUNT(*) FROM participant WHERE study_id = \(id) AND registered_at IS NOT NULL),
                   (SELECT COUNT(*) FROM occurrence WHERE study_id = \(id) AND status = 'pending'),
                   (SELECT COUNT(*) FROM push WHERE study_id = \(id) AND status = 'sent'),
                   (SELECT COUNT(*) FROM submission WHERE study_id = \(id))
            """)
        let (participants, registered, pending, sent, submissions) = try row[0].decode((Int, Int, Int, Int, Int).self)
        return AdminWire.StudyStats(participants: participants, registered: registered, occurrencesPending: pending, pushesSent: sent,
                                    submissions: submissions)
    }

    func insertParticipants(_ records: [ParticipantRecord]) async throws {
        let ids = records.map(\.patientId)
        try await transaction { connection in
            if let taken = try await connection.query("SELECT patient_id FROM participant WHERE patient_id = ANY(\(ids)::text[]) LIMIT 1",
                                                      logger: self.logger).collect().first {
                throw StoreError.participantExists(try taken.decode(String.self))
            }
            do {
                for part in records.chunked(Self.chunk) {
                    try await self.insertValues(connection, "INSERT INTO participant (patient_id, study_id, password_record, private_key)",
                                                columns: 4, part) { binds, r in
                        binds.append(r.patientId)
                        binds.append(r.studyId)
                        binds.append(r.passwordRecord)
                        try binds.append(r.privateKey)
                    }
                }
            } catch let error where PostgresStoreError.isUniqueViolation(error) {
                // Another request created one of these ids between the check and the insert.
                throw StoreError.participantExists(ids.first ?? "")
            }
        }
    }

    /// `prefix VALUES (...), (...) suffix` for `rows`, each giving `columns` binds.
    func insertValues<R>(_ connection: PostgresConnection, _ prefix: String, columns: Int, _ rows: [R], suffix: String = "",
                         bind: (inout PostgresBindings, R) throws -> Void) async throws {
        guard !rows.isEmpty else { return }
        var binds = PostgresBindings(capacity: rows.count * columns)
        var sql = prefix + " VALUES "
        var n = 0
        for (i, row) in rows.enumerated() {
            if i > 0 { sql += ", " }
            sql += "(" + (1...columns).map { "$\(n + $0)" }.joined(separator: ", ") + ")"
            n += columns
            try bind(&binds, row)
        }
        try await connection.query(PostgresQuery(unsafeSQL: sql + " " + suffix, binds: binds), logger: logger)
    }

    func participant(_ id: String) async throws -> ParticipantRecord? {
        try await rows("SELECT * FROM participant WHERE patient_id = \(id)").first.map(ParticipantRecord.init(pg:))
    }

    func setInterventionDate(patientID: String, name: String, date: String) async throws {
        try await write("""
            INSERT INTO intervention (patient_id, name, date) VALUES (\(patientID), \(name), \(date))
            ON CONFLICT (patient_id, name) DO UPDATE SET date = excluded.date
            """)
    }

    func insertSurvey(_ s: SurveyRecord) async throws {
        try await write("""
            INSERT INTO survey (id, study_id, name, survey_type, content, settings, schedules, deleted, created_at, updated_at)
            VALUES (\(s.id), \(s.studyId), \(s.name), \(s.surveyType), \(s.content), \(s.settings), \(s.schedules), \(s.deleted),
                \(s.createdAt), \(s.updatedAt))
            """)
    }

    func updateSurvey(_ s: SurveyRecord) async throws {
        try await write("""
            UPDATE survey SET name = \(s.name), survey_type = \(s.surveyType), content = \(s.content), settings = \(s.settings),
                schedules = \(s.schedules), deleted = \(s.deleted), updated_at = \(s.updatedAt)
            WHERE id = \(s.id)
            """)
    }

    func deleteSurvey(_ id: String) async throws {
        try await write("UPDATE survey SET deleted = TRUE WHERE id = \(id)")
    }

    func occurrences(studyID: String, patientID: String?, all: Bool) async throws -> [OccurrenceRecord] {
        try await rows("""
            SELECT * FROM occurrence WHERE study_id = \(studyID) AND (\(all) OR status = 'pending')
            AND (\(patientID)::text IS NULL OR patient_id = \(patientID)) ORDER BY due_at, patient_id, survey_id
            """).map(OccurrenceRecord.init(pg:))
    }

    func pushes(studyID: String, patientID: String?) async throws -> [PushRecord] {
        try await rows("""
            SELECT * FROM push WHERE study_id = \(studyID) AND (\(patientID)::text IS NULL OR patient_id = \(patientID)) ORDER BY seq
            """).map(PushRecord.init(pg:))
    }

    func push(uuid: String) async throws -> (PushRecord, [String])? {
        guard let record = try await rows("SELECT * FROM push WHERE uuid = \(uuid)").first.map(PushRecord.init(pg:)) else { return nil }
        let confirmed = try await rows("SELECT uuid FROM notification_report WHERE patient_id = \(record.patientId)").map { try $0.decode(String.self) }
        return (record, confirmed)
    }

    func notificationReceipts(studyID: String) async throws -> Set<String> {
        Set(try await rows("""
            SELECT r.patient_id || ' ' || r.uuid FROM notification_report r JOIN participant p ON p.patient_id = r.patient_id
            WHERE p.study_id = \(studyID)
            """).map { try $0.decode(String.self) })
    }

    func submissions(studyID: String, patientID: String?) async throws -> [SubmissionRecord] {
        try await rows("""
            SELECT * FROM submission WHERE study_id = \(studyID) AND (\(patientID)::text IS NULL OR patient_id = \(patientID)) ORDER BY seq
            """).map(SubmissionRecord.init(pg:))
    }

    func wipe() async throws {
        try await write(PostgresQuery(unsafeSQL: "TRUNCATE " + Schema.tables.joined(separator: ", ")))
    }

    // MARK: Scheduling

    func realTimeStudies() async throws -> [String] {
        try await rows("SELECT id FROM study WHERE clock_mode = 'real' AND scheduling = 'server'").map { try $0.decode(String.self) }
    }

    func registeredParticipants(studyID: String) async throws -> [ParticipantRecord] {
        try await rows("SELECT * FROM participant WHERE study_id = \(studyID) AND registered_at IS NOT NULL").map(ParticipantRecord.init(pg:))
    }

    func participantsToExtend(studyID: String, horizon: Double) async throws -> [ParticipantRecord] {
        try await rows("""
            SELECT * FROM participant WHERE study_id = \(studyID) AND registered_at IS NOT NULL AND NOT retired
            AND (materialized_through IS NULL OR materialized_through < \(horizon))
            """).map(ParticipantRecord.init(pg:))
    }

    func studyInterventionDates(studyID: String) async throws -> [String: [String: String]] {
        var all: [String: [String: String]] = [:]
        for row in try await rows("""
            SELECT i.patient_id, i.name, i.date FROM intervention i JOIN participant p ON p.patient_id = i.patient_id
            WHERE p.study_id = \(studyID)
            """) {
            let (patient, name, date) = try row.decode((String, String, String).self)
            all[patient, default: [:]][name] = date
        }
        return all
    }

    func pendingOccurrences(surveyID: String, patientIDs: [String]) async throws -> [String: [String]] {
        var found: [String: [String]] = [:]
        for row in try await rows("""
            SELECT patient_id, uuid FROM occurrence WHERE survey_id = \(surveyID) AND status = 'pending' AND patient_id = ANY(\(patientIDs)::text[])
            """) {
            let (patient, uuid) = try row.decode((String, String).self)
            found[patient, default: []].append(uuid)
        }
        return found
    }

    /// Rows per bulk statement: arrays of this length, or VALUES lists under PostgreSQL's 65,535 binds.
    static let chunk = 4_000

    func applyPlan(_ plan: PlanChanges) async throws {
        guard !plan.isEmpty else { return }
        let inserts = plan.inserts.chunked(Self.chunk), horizons = plan.materialized.chunked(Self.chunk)
        let steps = max(inserts.count, horizons.count)
        if plan.deletes.isEmpty, steps == 1 {
            // A participant's first plan (a registration): one statement, so one round trip and its own transaction.
            try await write(Self.insertAndAdvance(inserts.first ?? [], horizons.first ?? []))
            return
        }
        try await transaction { connection in
            for part in plan.deletes.chunked(Self.chunk) {
                try await connection.query("DELETE FROM occurrence WHERE uuid = ANY(\(part)::text[]) AND status = 'pending'", logger: self.logger)
            }
            for step in 0..<steps {
                try await connection.query(Self.insertAndAdvance(step < inserts.count ? inserts[step] : [],
                                                                 step < horizons.count ? horizons[step] : []), logger: self.logger)
            }
        }
    }

    /// New occurrence rows (an existing uuid is kept) and participants' new horizons, in one statement.
    private static func insertAndAdvance(_ part: [OccurrenceRecord], _ horizons: [(patientID: String, through: Double)]) -> PostgresQuery {
        """
        WITH inserted AS (
            INSERT INTO occurrence (uuid, study_id, survey_id, patient_id, schedule_index, due_at, local_time, status)
            SELECT u, st, su, p, i, d, l, 'pending'
            FROM UNNEST(\(part.map(\.uuid))::text[], \(part.map(\.studyId))::text[], \(part.map(\.surveyId))::text[],
                \(part.map(\.patientId))::text[], \(part.map(\.scheduleIndex))::bigint[], \(part.map(\.dueAt))::float8[],
                \(part.map(\.localTime))::text[]) AS t(u, st, su, p, i, d, l)
            ON CONFLICT DO NOTHING
        )
        UPDATE participant SET materialized_through = t.m
        FROM UNNEST(\(horizons.map(\.patientID))::text[], \(horizons.map(\.through))::float8[]) AS t(p, m)
        WHERE participant.patient_id = t.p
        """
    }

    func dueMoments(studyID: String, after: Double, through: Double) async throws -> [Double] {
        try await rows("""
            SELECT DISTINCT due_at FROM occurrence WHERE study_id = \(studyID) AND status = 'pending' AND due_at > \(after) AND due_at <= \(through)
            ORDER BY due_at
            """).map { try $0.decode(Double.self) }
    }

    func nextRetryMoment(studyID: String, after: Double, through: Double) async throws -> Double? {
        try await rows("""
            SELECT MIN(p.retry_after) FROM participant p
            WHERE p.study_id = \(studyID) AND NOT p.retired AND p.push_token IS NOT NULL AND p.token_unregistered_at IS NULL
            AND p.retry_after > \(after) AND p.retry_after <= \(through)
            AND EXISTS (SELECT 1 FROM occurrence o WHERE o.patient_id = p.patient_id AND o.status = 'pending' AND o.due_at <= p.retry_after)
            """).first?.decode(Double?.self) ?? nil
    }

    func dueWork(studyID: String, at t: Double, patientID: String?) async throws -> [DueWork] {
        let occurrences = try await rows("""
            SELECT * FROM occurrence WHERE study_id = \(studyID) AND status = 'pending' AND due_at <= \(t)
            AND (\(patientID)::text IS NULL OR patient_id = \(patientID)) ORDER BY patient_id, due_at
            """).map(OccurrenceRecord.init(pg:))
        guard !occurrences.isEmpty else { return [] }
        let people = try await rows("""
            SELECT * FROM participant WHERE NOT retired AND patient_id IN
            (SELECT DISTINCT patient_id FROM occurrence WHERE study_id = \(studyID) AND status = 'pending' AND due_at <= \(t)
             AND (\(patientID)::text IS NULL OR patient_id = \(patientID)))
            """).map(ParticipantRecord.init(pg:))
        return DueWork.group(occurrences, people: people)
    }

    func nextResendMoment(studyID: String, after: Double, through: Double) async throws -> Double? {
        try await rows("""
            SELECT MIN(o.resend_at) FROM occurrence o JOIN participant p ON p.patient_id = o.patient_id
            WHERE o.study_id = \(studyID) AND o.status = 'sent' AND o.resend_at > \(after) AND o.resend_at <= \(through)
            AND NOT p.retired AND p.push_token IS NOT NULL AND p.token_unregistered_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM notification_report r WHERE r.patient_id = o.patient_id AND lower(r.uuid) = o.uuid)
            """).first?.decode(Double?.self) ?? nil
    }

    func dueResends(studyID: String, at t: Double, patientID: String?) async throws -> [DueWork] {
        let occurrences = try await rows("""
            SELECT o.* FROM occurrence o WHERE o.study_id = \(studyID) AND o.status = 'sent' AND o.resend_at <= \(t)
            AND (\(patientID)::text IS NULL OR o.patient_id = \(patientID))
            AND NOT EXISTS (SELECT 1 FROM notification_report r WHERE r.patient_id = o.patient_id AND lower(r.uuid) = o.uuid)
            ORDER BY o.patient_id, o.due_at
            """).map(OccurrenceRecord.init(pg:))
        guard !occurrences.isEmpty else { return [] }
        let ids = Array(Set(occurrences.map(\.patientId)))
        let people = try await rows("SELECT * FROM participant WHERE NOT retired AND patient_id = ANY(\(ids)::text[])").map(ParticipantRecord.init(pg:))
        return DueWork.group(occurrences, people: people)
    }

    func recordFiring(_ outcomes: [FiringOutcome], at t: Double) async throws {
        let pushes = outcomes.flatMap(\.records)
        let resends = outcomes.flatMap(\.resendAt)
        let marks = outcomes.flatMap { o in o.sent.map { ($0.occurrence, "sent", $0.push) } + o.expired.map { ($0.occurrence, "expired", $0.push) } }
        var delivered: [String] = []
        var unregistered: [(String, String)] = []
        var backOff: [(String, Double, Int)] = []
        for outcome in outcomes {
            guard let patientID = outcome.records.first?.patientId else { continue }
            switch outcome.update {
            case .none: break
            case .delivered: delivered.append(patientID)
            case .unregistered(let token): unregistered.append((patientID, token))
            case .backOff(let until, let count): backOff.append((patientID, until, count))
            }
        }
        try await transaction { [delivered, unregistered, backOff, resends] connection in
            for part in pushes.chunked(Self.chunk) {
                try await self.insertValues(connection, """
                    INSERT INTO push (uuid, study_id, patient_id, survey_ids, schedule_uuids, due_at, sent_at, status, relay_status,
                        relay_reason, nonce, relay_message_id, resend)
                    """, columns: 13, part) { binds, r in
                    binds.append(r.uuid)
                    binds.append(r.studyId)
                    binds.append(r.patientId)
                    binds.append(r.surveyIds)
                    binds.append(r.scheduleUuids)
                    binds.append(r.dueAt)
                    binds.append(r.sentAt)
                    binds.append(r.status)
                    binds.append(r.relayStatus)
                    binds.append(r.relayReason)
                    binds.append(r.nonce)
                    binds.append(r.relayMessageId)
                    binds.append(r.resend)
                }
            }
            for part in resends.chunked(Self.chunk) {
                try await connection.query("""
                    UPDATE occurrence SET resend_at = NULLIF(t.a, 'NaN'::float8)
                    FROM UNNEST(\(part.map(\.occurrence))::text[], \(part.map { $0.at ?? .nan })::float8[]) AS t(u, a)
                    WHERE occurrence.uuid = t.u
                    """, logger: self.logger)
            }
            for part in marks.chunked(Self.chunk) {
                try await connection.query("""
                    UPDATE occurrence SET status = t.s, push_uuid = t.p
                    FROM UNNEST(\(part.map(\.0))::text[], \(part.map(\.1))::text[], \(part.map(\.2))::text[]) AS t(u, s, p)
                    WHERE occurrence.uuid = t.u
                    """, logger: self.logger)
            }
            if !delivered.isEmpty {
                try await connection.query("""
                    UPDATE participant SET retry_after = NULL, retry_count = 0 WHERE patient_id = ANY(\(delivered)::text[])
                    """, logger: self.logger)
            }
            if !unregistered.isEmpty {
                try await connection.query("""
                    UPDATE participant SET token_unregistered_at = \(t)
                    FROM UNNEST(\(unregistered.map(\.0))::text[], \(unregistered.map(\.1))::text[]) AS x(p, k)
                    WHERE participant.patient_id = x.p AND participant.push_token = x.k
                    """, logger: self.logger)
            }
            if !backOff.isEmpty {
                try await connection.query("""
                    UPDATE participant SET retry_after = x.a, retry_count = x.c
                    FROM UNNEST(\(backOff.map(\.0))::text[], \(backOff.map(\.1))::float8[], \(backOff.map(\.2))::bigint[]) AS x(p, a, c)
                    WHERE participant.patient_id = x.p
                    """, logger: self.logger)
            }
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
