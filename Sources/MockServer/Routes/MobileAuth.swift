import Foundation
import GRDB
import Hummingbird
import ServerSupport
import SurveyCrypto
import SurveyWire

/// Credential checks and the per-request device updates of the mobile API (PROTOCOL.md §1).
struct MobileAuth: Sendable {
    let store: Store

    /// 403, or 401 on `/ios` paths, with a JSON body.
    static func denied(_ form: MobileForm, _ message: String) -> APIError {
        APIError(form.isIOS ? .unauthorized : .forbidden, code: "invalid_credentials", message)
    }

    /// Checks `patient_id`, `password` and `device_id`; returns the participant and its study.
    func authenticate(_ form: MobileForm) async throws -> (ParticipantRecord, StudyRecord) {
        for name in ["patient_id", "password", "device_id"] where form[name] == nil {
            throw MockServerError.missingField(name)
        }
        let patientID = form["patient_id"]!
        let password = form["password"]!
        let found = try await store.read { db -> (ParticipantRecord, StudyRecord)? in
            guard let p = try ParticipantRecord.fetchOne(db, key: patientID),
                  let s = try StudyRecord.fetchOne(db, key: p.studyId) else { return nil }
            return (p, s)
        }
        guard let (participant, study) = found else { throw Self.denied(form, "unknown participant") }
        guard !participant.retired else { throw Self.denied(form, "participant is retired") }
        guard BeiwePassword.verify(deviceHash: password, record: participant.passwordRecord) else {
            throw Self.denied(form, "wrong password")
        }
        return (participant, study)
    }

    /// Records what every request may carry: versions, OS version, device status, reported time zone,
    /// device id and notification receipts.
    func recordDeviceFields(_ form: MobileForm, patientID: String, at now: Date) async throws {
        try await store.write { db in try Self.recordDeviceFields(db, form, patientID: patientID, at: now) }
    }

    /// The same, inside a transaction the caller already holds.
    static func recordDeviceFields(_ db: Database, _ form: MobileForm, patientID: String, at now: Date) throws {
        var assignments: [String] = []
        var arguments: StatementArguments = []
        for (field, column) in [("version_code", "version_code"), ("version_name", "version_name"), ("os_version", "os_version"),
                                ("device_status_report", "device_status_report"), ("timezone", "reported_timezone"),
                                ("device_id", "device_id")] {
            if let value = form[field], !value.isEmpty {
                assignments.append("\(column) = ?")
                _ = arguments.append(contentsOf: [field == "device_status_report" ? value : String(value.prefix(64))])
            }
        }
        if !assignments.isEmpty {
            _ = arguments.append(contentsOf: [patientID])
            try db.execute(sql: "UPDATE participant SET \(assignments.joined(separator: ", ")) WHERE patient_id = ?", arguments: arguments)
        }
        for uuid in notificationUUIDs(form["notification_uuids"]) {
            try db.execute(sql: "INSERT OR IGNORE INTO notification_report (patient_id, uuid, at) VALUES (?, ?, ?)",
                           arguments: [patientID, uuid, now.timeIntervalSince1970])
        }
    }

    /// UUIDs from a `notification_uuids` JSON list; other entries are dropped (as Beiwe does).
    static func notificationUUIDs(_ text: String?) -> [String] {
        guard let text, text.hasPrefix("["), text.hasSuffix("]"),
              let list = try? WireJSON.decode([JSONValue].self, from: text) else { return [] }
        return list.compactMap { $0.stringValue }.filter { UUID(uuidString: $0) != nil }.map { $0.lowercased() }
    }
}
