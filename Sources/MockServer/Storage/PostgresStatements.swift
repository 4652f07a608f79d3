import PostgresNIO

// The mobile API's hot statements, prepared once per pooled connection (postgres-nio prepares a statement on a
// connection the first time it runs there): PostgreSQL then skips parsing and, after a few runs, planning, which
// were most of its CPU per registration. Each is one statement, so one round trip and its own transaction.

/// A participant and its study in one round trip: the participant's columns, then the study's under an `s_` prefix.
struct ParticipantAndStudyStatement: PostgresPreparedStatement {
    static let name = "trio_participant_and_study"
    static let sql = """
        SELECT p.*, \(StudyRecord.prefixedColumns) FROM participant p JOIN study s ON s.id = p.study_id WHERE p.patient_id = $1
        """
    static let bindingDataTypes: [PostgresDataType] = [.text]
    typealias Row = (ParticipantRecord, StudyRecord)

    var patientID: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(patientID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        (try ParticipantRecord(pg: row), try StudyRecord(pg: row, prefix: "s_"))
    }
}

/// `/register_user`'s write: the registration, what the request reported (its device id wins over the form's) and its
/// notification receipts. The first registration fixes the time zone (SET expressions see the row's old values); the
/// token's UNIQUE constraint answers "held by another participant" (SQLSTATE 23505). No row: the participant is gone.
struct RegisterStatement: PostgresPreparedStatement {
    static let name = "trio_register"
    static let sql = """
        WITH updated AS (
            UPDATE participant SET
                timezone = CASE WHEN registered_at IS NULL THEN $1 ELSE timezone END,
                timezone_fallback = CASE WHEN registered_at IS NULL THEN $2 ELSE timezone_fallback END,
                registered_at = COALESCE(registered_at, $3), last_registered_at = $3,
                password_record = $4, device_id = COALESCE($5, $6), os = $7, device_info = $8, push_token = $9,
                token_unregistered_at = NULL, retry_after = NULL, retry_count = 0,
                version_code = COALESCE($10, version_code), version_name = COALESCE($11, version_name),
                os_version = COALESCE($12, os_version), device_status_report = COALESCE($13, device_status_report),
                reported_timezone = COALESCE($14, reported_timezone)
            WHERE patient_id = $15
            RETURNING timezone
        ), receipts AS (
            INSERT INTO notification_report (patient_id, uuid, at)
            SELECT $15, u, $17 FROM UNNEST($16::text[]) AS u WHERE EXISTS (SELECT 1 FROM updated)
            ON CONFLICT DO NOTHING
        )
        SELECT timezone FROM updated
        """
    static let bindingDataTypes: [PostgresDataType] = [.text, .bool, .float8, .text, .text, .text, .text, .text, .text,
                                                       .text, .text, .text, .text, .text, .text, .textArray, .float8]
    typealias Row = String?

    var registration: Registration
    var report: DeviceReport

    func makeBindings() throws -> PostgresBindings {
        let r = registration
        var bindings = PostgresBindings(capacity: 17)
        bindings.append(r.timezone)
        bindings.append(r.timezoneIsFallback)
        bindings.append(r.at)
        bindings.append(r.passwordRecord)
        bindings.append(report.deviceID)
        bindings.append(r.deviceID)
        bindings.append(r.os)
        bindings.append(r.deviceInfo)
        bindings.append(r.pushToken)
        bindings.append(report.versionCode)
        bindings.append(report.versionName)
        bindings.append(report.osVersion)
        bindings.append(report.deviceStatusReport)
        bindings.append(report.timezone)
        bindings.append(r.patientID)
        bindings.append(report.notificationUUIDs)
        bindings.append(report.at)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(String?.self)
    }
}
