import Foundation
import GRDB
import Scheduling
import SurveyWire

/// A study row.
struct StudyRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "study"
    var id: String
    var name: String
    var timezone: String
    var scheduling: String
    var deviceSettings: String
    var maxDelayMinutes: Int
    var perParticipantKeys: Bool
    var clockMode: String
    var frozenAt: Double?
    var privateKey: Data
    var createdAt: Double

    enum CodingKeys: String, CodingKey {
        case id, name, timezone, scheduling, deviceSettings = "device_settings", maxDelayMinutes = "max_delay_minutes"
        case perParticipantKeys = "per_participant_keys", clockMode = "clock_mode", frozenAt = "frozen_at"
        case privateKey = "private_key", createdAt = "created_at"
    }

    var isServerScheduled: Bool { scheduling == "server" }

    /// The study's current time: its frozen instant, or `realNow`.
    func now(real realNow: Date) -> Date {
        if clockMode == "frozen", let frozenAt { return Date(timeIntervalSince1970: frozenAt) }
        return realNow
    }

    /// `max_delay_minutes` in seconds, in floating point (no integer product that could trap on a bad row).
    var maxDelay: TimeInterval { TimeInterval(maxDelayMinutes) * 60 }

    /// Why this stored row cannot be scheduled, or nil. A row the API would never have written (an older build, an edit
    /// by hand) is quarantined: the scheduler skips the study and logs this, instead of trapping on it.
    var quarantineReason: String? {
        if !WireLimits.maxDelayMinutes.contains(maxDelayMinutes) { return "max_delay_minutes \(maxDelayMinutes) is out of range" }
        if let frozenAt, !frozenAt.isFinite || (try? WireTime.checkYear(Date(timeIntervalSince1970: frozenAt), "frozen_at")) == nil {
            return "frozen_at \(frozenAt) is out of range"
        }
        if TimeZone(identifier: timezone) == nil { return "time zone '\(timezone)' is unknown" }
        return nil
    }

    var settingsObject: [String: JSONValue] {
        (try? WireJSON.decode([String: JSONValue].self, from: deviceSettings)) ?? [:]
    }
}

extension StudyRecord {
    /// Decodes by column name without `Decodable` (the mobile API reads a study on every request).
    init(row: Row) throws {
        id = row["id"]
        name = row["name"]
        timezone = row["timezone"]
        scheduling = row["scheduling"]
        deviceSettings = row["device_settings"]
        maxDelayMinutes = row["max_delay_minutes"]
        perParticipantKeys = row["per_participant_keys"]
        clockMode = row["clock_mode"]
        frozenAt = row["frozen_at"]
        privateKey = row["private_key"]
        createdAt = row["created_at"]
    }
}

/// A participant row.
struct ParticipantRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "participant"
    var patientId: String
    var studyId: String
    var passwordRecord: String
    var privateKey: Data?
    var registeredAt: Double?
    var lastRegisteredAt: Double?
    var timezone: String?
    var timezoneFallback: Bool
    var reportedTimezone: String?
    var pushToken: String?
    var tokenUnregisteredAt: Double?
    var retryAfter: Double?
    var retryCount: Int
    var deviceId: String?
    var os: String?
    var versionCode: String?
    var versionName: String?
    var osVersion: String?
    var deviceStatusReport: String?
    var deviceInfo: String?
    var materializedThrough: Double?
    var lastHeartbeatAt: Double?
    var retired: Bool

    enum CodingKeys: String, CodingKey {
        case patientId = "patient_id", studyId = "study_id", passwordRecord = "password_record", privateKey = "private_key"
        case registeredAt = "registered_at", lastRegisteredAt = "last_registered_at", timezone
        case timezoneFallback = "timezone_fallback", reportedTimezone = "reported_timezone", pushToken = "push_token"
        case tokenUnregisteredAt = "token_unregistered_at", retryAfter = "retry_after", retryCount = "retry_count", deviceId = "device_id", os
        case versionCode = "version_code", versionName = "version_name", osVersion = "os_version"
        case deviceStatusReport = "device_status_report", deviceInfo = "device_info"
        case materializedThrough = "materialized_through", lastHeartbeatAt = "last_heartbeat_at", retired
    }

    /// Decodes by column name without `Decodable` (the mobile API reads a participant on every request).
    init(row: Row) throws {
        patientId = row["patient_id"]
        studyId = row["study_id"]
        passwordRecord = row["password_record"]
        privateKey = row["private_key"]
        registeredAt = row["registered_at"]
        lastRegisteredAt = row["last_registered_at"]
        timezone = row["timezone"]
        timezoneFallback = row["timezone_fallback"]
        reportedTimezone = row["reported_timezone"]
        pushToken = row["push_token"]
        tokenUnregisteredAt = row["token_unregistered_at"]
        retryAfter = row["retry_after"]
        retryCount = row["retry_count"]
        deviceId = row["device_id"]
        os = row["os"]
        versionCode = row["version_code"]
        versionName = row["version_name"]
        osVersion = row["os_version"]
        deviceStatusReport = row["device_status_report"]
        deviceInfo = row["device_info"]
        materializedThrough = row["materialized_through"]
        lastHeartbeatAt = row["last_heartbeat_at"]
        retired = row["retired"]
    }

    init(patientId: String, studyId: String, passwordRecord: String, privateKey: Data?) {
        self.patientId = patientId
        self.studyId = studyId
        self.passwordRecord = passwordRecord
        self.privateKey = privateKey
        timezoneFallback = false
        retryCount = 0
        retired = false
    }

    var view: AdminWire.Participant {
        AdminWire.Participant(
            patientID: patientId, studyID: studyId,
            registeredAt: registeredAt.map { WireTime.format(Date(timeIntervalSince1970: $0)) },
            timezone: timezone, timezoneFallback: timezoneFallback, pushToken: pushToken,
            pushTokenUnregistered: tokenUnregisteredAt != nil, deviceID: deviceId, os: os,
            lastRegisteredAt: lastRegisteredAt.map { WireTime.format(Date(timeIntervalSince1970: $0), milliseconds: true) })
    }
}

/// A survey row.
struct SurveyRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "survey"
    var id: String
    var studyId: String
    var name: String
    var surveyType: String
    var content: String
    var settings: String
    var schedules: String
    var deleted: Bool
    var createdAt: Double
    var updatedAt: Double

    enum CodingKeys: String, CodingKey {
        case id, studyId = "study_id", name, surveyType = "survey_type", content, settings, schedules, deleted
        case createdAt = "created_at", updatedAt = "updated_at"
    }

    /// The survey's schedules; empty when the stored JSON does not decode or an entry is out of range (decoding
    /// validates each entry), so a bad row plans nothing instead of trapping (``PreparedSurvey/quarantined`` says so).
    var scheduleList: [Schedule] { (try? WireJSON.decode([Schedule].self, from: schedules)) ?? [] }

    /// The mobile API's entry. `timings` (for `/download_surveys`) are the weekly entries, plus Beiwe's moving window
    /// of one-off occurrences when the participant's context is known.
    func entry(withTimings: Bool, participant: ParticipantContext? = nil, now: Date = Date()) -> SurveyEntry {
        let contentValue = (try? WireJSON.decode([JSONValue].self, from: content)) ?? []
        let settingsValue = (try? WireJSON.decode(JSONValue.self, from: settings)) ?? .object([:])
        var timings: [[Int]]?
        if withTimings {
            timings = participant.map { OccurrenceCalculator.timings(of: scheduleList, for: $0, around: now) }
                ?? OccurrenceCalculator.weeklyTimings(of: scheduleList)
        }
        return SurveyEntry(id: id, name: name, surveyType: surveyType, content: contentValue, settings: settingsValue, timings: timings)
    }
}

/// An occurrence row.
struct OccurrenceRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "occurrence"
    var uuid: String
    var studyId: String
    var surveyId: String
    var patientId: String
    var scheduleIndex: Int
    var dueAt: Double
    var localTime: String
    var status: String
    var pushUuid: String?

    enum CodingKeys: String, CodingKey {
        case uuid, studyId = "study_id", surveyId = "survey_id", patientId = "patient_id", scheduleIndex = "schedule_index"
        case dueAt = "due_at", localTime = "local_time", status, pushUuid = "push_uuid"
    }

    var view: AdminWire.Occurrence {
        AdminWire.Occurrence(uuid: uuid, surveyID: surveyId, patientID: patientId,
                             dueAt: WireTime.format(Date(timeIntervalSince1970: dueAt)), localTime: localTime, status: status)
    }
}

/// A push log row.
struct PushRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "push"
    var seq: Int64?
    var uuid: String
    var studyId: String
    var patientId: String
    var surveyIds: String
    var scheduleUuids: String
    var dueAt: Double
    var sentAt: Double?
    var status: String
    var relayStatus: Int?
    var relayReason: String?
    var nonce: String?
    var relayMessageId: String?
    /// Whether the push re-sent occurrences whose receipt was not confirmed (Beiwe's resend, ``ResendRule``).
    var resend = false

    enum CodingKeys: String, CodingKey {
        case seq, uuid, studyId = "study_id", patientId = "patient_id", surveyIds = "survey_ids", scheduleUuids = "schedule_uuids"
        case dueAt = "due_at", sentAt = "sent_at", status, relayStatus = "relay_status", relayReason = "relay_reason", nonce
        case relayMessageId = "relay_message_id", resend
    }

    var view: AdminWire.PushLogEntry {
        AdminWire.PushLogEntry(
            uuid: uuid, patientID: patientId,
            surveyIDs: (try? WireJSON.decode([String].self, from: surveyIds)) ?? [],
            scheduleUUIDs: (try? WireJSON.decode([String].self, from: scheduleUuids)) ?? [],
            dueAt: WireTime.format(Date(timeIntervalSince1970: dueAt)),
            sentAt: sentAt.map { WireTime.format(Date(timeIntervalSince1970: $0)) },
            status: status, relayStatus: relayStatus, relayReason: relayReason, nonce: nonce, relayMessageID: relayMessageId,
            resend: resend)
    }
}

/// A submission row (decrypted answers).
struct SubmissionRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "submission"
    var seq: Int64?
    var studyId: String
    var patientId: String
    var surveyId: String
    var fileName: String
    var receivedAt: Double
    var answers: String

    enum CodingKeys: String, CodingKey {
        case seq, studyId = "study_id", patientId = "patient_id", surveyId = "survey_id", fileName = "file_name"
        case receivedAt = "received_at", answers
    }

    var view: AdminWire.Submission {
        AdminWire.Submission(surveyID: surveyId, patientID: patientId, fileName: fileName,
                             receivedAt: WireTime.format(Date(timeIntervalSince1970: receivedAt)),
                             answers: (try? WireJSON.decode([SurveyAnswer].self, from: answers)) ?? [])
    }
}

/// A stored telemetry ping.
struct TelemetryRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "telemetry"
    var seq: Int64?
    var documentId: String
    var appId: String
    var ping: String
    var schemaVersion: String
    var clientId: String
    var receivedAt: Double
    var body: String

    enum CodingKeys: String, CodingKey {
        case seq, documentId = "document_id", appId = "app_id", ping, schemaVersion = "schema_version", clientId = "client_id"
        case receivedAt = "received_at", body
    }

    var view: AdminWire.StoredPing {
        AdminWire.StoredPing(documentID: documentId, appID: appId, ping: ping, schemaVersion: schemaVersion, clientID: clientId.isEmpty ? nil : clientId,
                             receivedAt: WireTime.format(Date(timeIntervalSince1970: receivedAt), milliseconds: true),
                             body: (try? WireJSON.decode(JSONValue.self, from: body)) ?? .null)
    }
}
