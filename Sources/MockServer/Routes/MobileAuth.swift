import Foundation
import Hummingbird
import ServerSupport
import SurveyCrypto
import SurveyWire

/// Credential checks and the per-request device updates of the mobile API (PROTOCOL.md §1).
struct MobileAuth: Sendable {
    let store: any MobileStore
    /// `--profile`: refusals of inputs the real Beiwe server fails on.
    var profile: ServerProfile = .strict
    /// Failed-login counting (`--max-failed-logins`).
    var throttle: LoginThrottle? = nil
    /// A record to check unknown participants against, so that they cost the same PBKDF2 work as a wrong password.
    var decoyRecord: String? = nil
    var now: @Sendable () -> Date = { Date() }

    /// 403, or 401 on `/ios` paths, with a JSON body. Unknown participant, wrong password and retired participant get
    /// this same answer (and take the same time), so the API does not tell which participant ids exist.
    static func denied(_ form: MobileForm) -> APIError {
        APIError(form.isIOS ? .unauthorized : .forbidden, code: "invalid_credentials", "the patient_id, password or device_id is not valid")
    }

    /// Checks `patient_id`, `password` and `device_id`; returns the participant and its study.
    func authenticate(_ form: MobileForm) async throws -> (ParticipantRecord, StudyRecord) {
        try await authenticate(form) { password, record in BeiwePassword.verify(deviceHash: password, record: record) }
    }

    /// ``authenticate(_:)`` for a registration, which also stores a new password: the check and the new record's
    /// PBKDF2 work run together (``BeiwePassword/verifyAndMakeRecord(deviceHash:record:newDeviceHash:iterations:salt:)``).
    /// A request with an unknown participant does the same work against the decoy record, so the answer takes as long.
    /// (It throws only for `iterations` < 1, which the server refuses at start.)
    func authenticate(_ form: MobileForm, makingRecordFor newDeviceHash: String,
                      iterations: Int) async throws -> (ParticipantRecord, StudyRecord, newRecord: String) {
        var newRecord: String?
        let (participant, study) = try await authenticate(form) { password, record in
            let result = try BeiwePassword.verifyAndMakeRecord(deviceHash: password, record: record, newDeviceHash: newDeviceHash,
                                                               iterations: iterations)
            newRecord = result.newRecord
            return result.matches
        }
        guard let newRecord else { preconditionFailure("an authenticated request checked its password") }
        return (participant, study, newRecord)
    }

    /// The checks, with `check(password, record)` deciding whether the sent password matches a stored record.
    private func authenticate(_ form: MobileForm, check: (String, String) throws -> Bool) async throws -> (ParticipantRecord, StudyRecord) {
        for name in ["patient_id", "password", "device_id"] where form[name] == nil {
            throw MockServerError.missingField(name)
        }
        let patientID = form["patient_id"]!
        RequestJournal.current?.participant = patientID
        let password = form["password"]!
        let found = try await store.participantAndStudy(patientID)
        guard let (participant, study) = found else {
            // The same PBKDF2 work as a real check, against a record nobody's password matches.
            if let decoyRecord { _ = try check(password, decoyRecord) }
            throw Self.denied(form)
        }
        RequestJournal.current?.study = study.id
        let t = now().timeIntervalSince1970
        if let wait = throttle?.retryAfter(participant.patientId, now: t) {
            var error = APIError(.tooManyRequests, code: "too_many_failed_logins",
                                 "too many failed logins for this participant; try again in \(wait) s")
            error.headers = [.retryAfter: "\(wait)"]
            throw error
        }
        let matches = try check(password, participant.passwordRecord)
        guard matches, !participant.retired else {
            if !matches { throttle?.failed(participant.patientId, now: t) }
            throw Self.denied(form)
        }
        // Every authenticated request records `os_version` in Beiwe's app-version history (16 characters).
        if let refusal = profile.checkOSVersion(form["os_version"]) { throw refusal }
        throttle?.succeeded(participant.patientId)
        return (participant, study)
    }

    /// Records what every request may carry: versions, OS version, device status, reported time zone,
    /// device id and notification receipts.
    func recordDeviceFields(_ form: MobileForm, patientID: String, at now: Date) async throws {
        try await store.recordDevice(try Self.deviceReport(form, at: now), patientID: patientID)
    }

    /// What `form` reports about the device. An absent or empty field keeps the stored value; the short fields are
    /// cut to 64 characters; an over-long `device_status_report` is refused.
    static func deviceReport(_ form: MobileForm, at now: Date) throws -> DeviceReport {
        func given(_ field: String, limit: Int? = 64) -> String? {
            guard let value = form[field], !value.isEmpty else { return nil }
            return limit.map { String(value.prefix($0)) } ?? value
        }
        if let report = form["device_status_report"] {
            try WireRangeError.check(report, maxLength: WireLimits.freeTextLength, "device_status_report")
        }
        return DeviceReport(versionCode: given("version_code"), versionName: given("version_name"), osVersion: given("os_version"),
                            deviceStatusReport: given("device_status_report", limit: nil), timezone: given("timezone"),
                            deviceID: given("device_id"), notificationUUIDs: notificationUUIDs(form["notification_uuids"]),
                            at: now.timeIntervalSince1970)
    }

    /// UUIDs from a `notification_uuids` JSON list; other entries are dropped (as Beiwe does).
    static func notificationUUIDs(_ text: String?) -> [String] {
        guard let text, text.hasPrefix("["), text.hasSuffix("]"),
              let list = try? WireJSON.decode([JSONValue].self, from: text) else { return [] }
        return list.compactMap { $0.stringValue }.filter { UUID(uuidString: $0) != nil }.map { $0.lowercased() }
    }
}
