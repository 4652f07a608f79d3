import Foundation
import PostgresNIO

// Rows of the PostgreSQL store decoded by column name into the records both stores share.

extension PostgresRandomAccessRow {
    /// The named column decoded as `T` (an optional `T` for nullable columns).
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        try self[column].decode(T.self)
    }

    /// A `BYTEA` column as `Data`.
    func data(_ column: String) throws -> Data? {
        try self[column].decode(ByteBuffer?.self).map { Data($0.readableBytesView) }
    }
}

extension StudyRecord {
    /// The study's columns, each renamed with an `s_` prefix, for joins that read a study beside another table's `*`.
    static let prefixedColumns = ["id", "name", "timezone", "scheduling", "device_settings", "max_delay_minutes", "per_participant_keys",
                                  "clock_mode", "frozen_at", "private_key", "created_at"].map { "s.\($0) AS s_\($0)" }.joined(separator: ", ")

    init(pg row: PostgresRow, prefix: String = "") throws {
        let r = row.makeRandomAccess()
        self.init(id: try r.value(prefix + "id"), name: try r.value(prefix + "name"), timezone: try r.value(prefix + "timezone"),
                  scheduling: try r.value(prefix + "scheduling"), deviceSettings: try r.value(prefix + "device_settings"),
                  maxDelayMinutes: try r.value(prefix + "max_delay_minutes"), perParticipantKeys: try r.value(prefix + "per_participant_keys"),
                  clockMode: try r.value(prefix + "clock_mode"), frozenAt: try r.value(prefix + "frozen_at"),
                  privateKey: try r.data(prefix + "private_key") ?? Data(), createdAt: try r.value(prefix + "created_at"))
    }
}

extension ParticipantRecord {
    init(pg row: PostgresRow) throws {
        let r = row.makeRandomAccess()
        self.init(patientId: try r.value("patient_id"), studyId: try r.value("study_id"), passwordRecord: try r.value("password_record"),
                  privateKey: try r.data("private_key"))
        registeredAt = try r.value("registered_at")
        lastRegisteredAt = try r.value("last_registered_at")
        timezone = try r.value("timezone")
        timezoneFallback = try r.value("timezone_fallback")
        reportedTimezone = try r.value("reported_timezone")
        pushToken = try r.value("push_token")
        tokenUnregisteredAt = try r.value("token_unregistered_at")
        retryAfter = try r.value("retry_after")
        retryCount = try r.value("retry_count")
        deviceId = try r.value("device_id")
        os = try r.value("os")
        versionCode = try r.value("version_code")
        versionName = try r.value("version_name")
        osVersion = try r.value("os_version")
        deviceStatusReport = try r.value("device_status_report")
        deviceInfo = try r.value("device_info")
        materializedThrough = try r.value("materialized_through")
        lastHeartbeatAt = try r.value("last_heartbeat_at")
        retired = try r.value("retired")
    }
}

extension SurveyRecord {
    init(pg row: PostgresRow) throws {
        let r = row.makeRandomAccess()
        self.init(id: try r.value("id"), studyId: try r.value("study_id"), name: try r.value("name"), surveyType: try r.value("survey_type"),
                  content: try r.value("content"), settings: try r.value("settings"), schedules: try r.value("schedules"),
                  deleted: try r.value("deleted"), createdAt: try r.value("created_at"), updatedAt: try r.value("updated_at"))
    }
}

extension OccurrenceRecord {
    init(pg row: PostgresRow) throws {
        let r = row.makeRandomAccess()
        self.init(uuid: try r.value("uuid"), studyId: try r.value("study_id"), surveyId: try r.value("survey_id"),
                  patientId: try r.value("patient_id"), scheduleIndex: try r.value("schedule_index"), dueAt: try r.value("due_at"),
                  localTime: try r.value("local_time"), status: try r.value("status"), pushUuid: try r.value("push_uuid"))
    }
}

extension PushRecord {
    init(pg row: PostgresRow) throws {
        let r = row.makeRandomAccess()
        self.init(seq: try r.value("seq"), uuid: try r.value("uuid"), studyId: try r.value("study_id"), patientId: try r.value("patient_id"),
                  surveyIds: try r.value("survey_ids"), scheduleUuids: try r.value("schedule_uuids"), dueAt: try r.value("due_at"),
                  sentAt: try r.value("sent_at"), status: try r.value("status"), relayStatus: try r.value("relay_status"),
                  relayReason: try r.value("relay_reason"), nonce: try r.value("nonce"), relayMessageId: try r.value("relay_message_id"),
                  resend: try r.value("resend"))
    }
}

extension SubmissionRecord {
    init(pg row: PostgresRow) throws {
        let r = row.makeRandomAccess()
        self.init(seq: try r.value("seq"), studyId: try r.value("study_id"), patientId: try r.value("patient_id"),
                  surveyId: try r.value("survey_id"), fileName: try r.value("file_name"), receivedAt: try r.value("received_at"),
                  answers: try r.value("answers"))
    }
}

extension TelemetryRecord {
    init(pg row: PostgresRow) throws {
        let r = row.makeRandomAccess()
        self.init(seq: try r.value("seq"), documentId: try r.value("document_id"), appId: try r.value("app_id"), ping: try r.value("ping"),
                  schemaVersion: try r.value("schema_version"), clientId: try r.value("client_id"), receivedAt: try r.value("received_at"),
                  body: try r.value("body"))
    }
}
