import Foundation
import Hummingbird
import Logging
import Scheduling
import ServerSupport
import SurveyCrypto
import SurveyWire

/// The Beiwe-compatible mobile API (PROTOCOL.md §1). Every path answers with and without a trailing
/// slash, and on an `/ios` variant whose authentication failures are 401.
struct MobileRoutes: Sendable {
    let context: ServerContext

    /// The mobile API's part of the store.
    var store: any MobileStore { context.store }
    var auth: MobileAuth {
        MobileAuth(store: context.store, profile: context.configuration.profile, throttle: context.loginThrottle,
                   decoyRecord: context.decoyPasswordRecord, now: context.realNow)
    }

    typealias Handler = @Sendable (MobileForm) async throws -> Response

    func add(to router: Router<BasicRequestContext>) {
        mobile(router, "register_user", register)
        mobile(router, "set_fcm_token", setToken)
        mobile(router, "download_surveys", downloadSurveys)
        mobile(router, "download_survey", downloadSurvey)
        mobile(router, "upload", limit: context.configuration.maxUploadBytes, upload)
        mobile(router, "mobile-heartbeat", heartbeat)
        mobile(router, "get_latest_device_settings", deviceSettings)
        mobile(router, "confirm_notifications", confirmNotifications)
    }

    private func mobile(_ router: Router<BasicRequestContext>, _ name: String, limit: Int? = nil, _ handler: @escaping Handler) {
        let limit = limit ?? context.configuration.maxBodyBytes
        for (path, isIOS) in [("/\(name)", false), ("/\(name)/ios", true)] {
            router.post(RouterPath(path)) { request, _ in
                let form = try await MobileForm.read(request, isIOS: isIOS, limit: limit)
                return try await handler(form)
            }
        }
    }

    // MARK: Registration

    /// Beiwe's registration keys plus `scheduling` and `timezone`, assembled from cached, pre-encoded parts
    /// (the device settings and public key are the same for every participant of a study).
    static func registrationBody(publicKey: String, settingsJSON: String, study: StudyRecord, timezone: String,
                                 profile: ServerProfile = .strict) -> String {
        guard profile == .strict else {
            // Beiwe's keys exactly: no scheduling flag, no time zone.
            return "{\"android_firebase_json\":null,\"client_public_key\":\(jsonString(publicKey)),\"device_settings\":\(settingsJSON),"
                + "\"ios_plist\":null,\"study_id\":\(jsonString(study.id)),\"study_name\":\(jsonString(study.name))}"
        }
        return "{\"android_firebase_json\":null,\"client_public_key\":\(jsonString(publicKey)),\"device_settings\":\(settingsJSON),"
            + "\"ios_plist\":null,\"scheduling\":\(jsonString(study.scheduling)),\"study_id\":\(jsonString(study.id)),"
            + "\"study_name\":\(jsonString(study.name)),\"timezone\":\(jsonString(timezone))}"
    }

    /// A JSON string literal.
    static func jsonString(_ text: String) -> String {
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static let fallbackZone = "America/New_York"

    /// What `device_info` keeps of a registration, in sorted order.
    static let deviceInfoKeys = ["beiwe_version", "brand", "device_os", "hardware_id", "manufacturer", "model", "os_version",
                                 "phone_number", "product"]

    func register(_ form: MobileForm) async throws -> Response {
        // The sent password's check and the new record's PBKDF2 work run together; credentials are checked before
        // `new_password` (an absent one makes a record that is thrown away with the refusal).
        let (participant, study, record) = try await auth.authenticate(
            form, makingRecordFor: BeiwePassword.deviceHash(form["new_password"] ?? ""), iterations: context.configuration.kdfIterations)
        _ = try form.require("new_password")
        _ = try form.require("phone_number")
        let profile = context.configuration.profile
        if let refusal = profile.checkOSVersion(form["os_version"]) { throw refusal }
        // The real Beiwe ignores `fcm_token` here: only `/set_fcm_token` stores a token.
        let token = profile == .beiwe ? nil : form["fcm_token"].flatMap { $0.isEmpty ? nil : $0 }
        if profile == .beiwe, !context.recentRegistrations.record(participant.patientId, second: Int(context.realNow().timeIntervalSince1970)) {
            // Beiwe writes `identifiers_<unix seconds>.csv` at every registration: the second within a second collides.
            throw APIError(.internalServerError, code: "server_error", "registered twice within one second")
        }
        if study.isServerScheduled, token == nil, profile == .strict {
            throw APIError(.badRequest, code: "push_token_required",
                           "this study schedules surveys on the server and pushes them; registration needs a non-empty fcm_token")
        }
        if let token, token.utf8.count > 256 {
            throw MockServerError.badField("fcm_token", "fcm_token is longer than 256 characters")
        }
        let requestedZone = form["timezone"] ?? ""
        let zoneIsValid = ZoneName.isValid(requestedZone)
        let zone = zoneIsValid ? requestedZone : Self.fallbackZone
        let now = study.now(real: context.realNow())
        // `device_info`: these keys, sorted, as compact JSON.
        var infoText = "{"
        for key in Self.deviceInfoKeys {
            if infoText.utf8.count > 1 { infoText += "," }
            infoText += "\"\(key)\":" + Self.jsonString(form[key] ?? "none")
        }
        infoText += "}"
        let os = form.isIOS ? "ios" : "android"
        let deviceID = form["device_id"] ?? ""
        let patientID = participant.patientId
        let registration = Registration(patientID: patientID, timezone: zone, timezoneIsFallback: !zoneIsValid, at: now.timeIntervalSince1970,
                                        passwordRecord: record, deviceID: deviceID, os: os, deviceInfo: infoText, pushToken: token)
        guard let registeredZone = try await store.register(registration, report: try MobileAuth.deviceReport(form, at: now)) else {
            throw MobileAuth.denied(form)
        }
        // Only server-scheduled studies have occurrences to plan; device studies schedule on the phone.
        if study.isServerScheduled {
            try await context.scheduler.participantChanged(studyID: study.id, patientID: patientID)
        }
        let body = Self.registrationBody(publicKey: try context.keys.publicKeyBase64(participant: participant, study: study),
                                         settingsJSON: context.keys.deviceSettingsJSON(study), study: study, timezone: registeredZone,
                                         profile: profile)
        return JSONResponse.make(data: Data(body.utf8))
    }

    static func settingsID(_ studyID: String) -> Int { Int(studyID.suffix(6), radix: 16) ?? 1 }

    // MARK: Push token

    func setToken(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        let token = try form.require("fcm_token")
        guard token.utf8.count <= 256 else { throw MockServerError.badField("fcm_token", "fcm_token is longer than 256 characters") }
        let patientID = participant.patientId
        try await store.setPushToken(token, patientID: patientID)
        try await auth.recordDeviceFields(form, patientID: patientID, at: study.now(real: context.realNow()))
        // Occurrences held back while the token was unregistered go out now, in one push (this participant's only).
        if study.isServerScheduled, participant.registeredAt != nil {
            try await context.scheduler.catchUp(studyID: study.id, patientID: patientID)
        }
        return JSONResponse.empty(.noContent)
    }

    // MARK: Surveys

    func downloadSurveys(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        try await auth.recordDeviceFields(form, patientID: participant.patientId, at: study.now(real: context.realNow()))
        let surveys = try await store.liveSurveys(studyID: study.id)
        var batch = PlanningBatch(interventions: [participant.patientId: try await store.interventionDates(patientID: participant.patientId)])
        let participantContext = batch.context(participant)
        let now = study.now(real: context.realNow())
        return JSONResponse.make(surveys.map { $0.entry(withTimings: true, participant: participantContext, now: now) })
    }

    func downloadSurvey(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        let surveyID = try form.require("survey_id")
        try await auth.recordDeviceFields(form, patientID: participant.patientId, at: study.now(real: context.realNow()))
        let survey = try await store.survey(surveyID)
        guard let survey, survey.studyId == study.id, !survey.deleted else {
            throw APIError(.notFound, code: "survey_not_found", "no survey '\(surveyID)' in this participant's study")
        }
        return JSONResponse.make(survey.entry(withTimings: false))
    }

    // MARK: Upload

    static let allowedExtensions: Set<String> = ["csv", "json", "mp4", "wav", "txt", "jpg"]
    /// Longer file names are refused as obviously invalid (Beiwe's own are under 100 characters).
    static let maxFileNameBytes = 256

    private func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    func upload(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        let now = study.now(real: context.realNow())
        try await auth.recordDeviceFields(form, patientID: participant.patientId, at: now)
        guard let fileName = form["file_name"], !fileName.isEmpty,
              let ext = fileName.split(separator: ".").last.map(String.init), Self.allowedExtensions.contains(ext.lowercased()),
              !fileName.hasPrefix("rList"), !fileName.hasPrefix("PersistedInstallation")
        else { return text(.ok, "file obviously invalid.") }
        guard fileName.utf8.count <= Self.maxFileNameBytes else { return text(.ok, "file obviously invalid.") }
        guard let file = form["file"] else { throw MockServerError.missingField("file") }
        guard !file.isEmpty else { return text(.ok, "empty file?") }
        let key = try context.keys.key(participant: participant, study: study)
        let decrypted: BeiweFile.Decrypted
        switch Self.decrypt(file, key: key) {
        case .success(let value):
            decrypted = value
        case .failure(let error):
            context.logger.info("undecryptable upload", metadata: ["file_name": "\(fileName)", "error": "\(error)"])
            return text(.ok, "file was bad due to '\(error.code)', delete it.")
        }
        let parts = fileName.split(separator: "_")
        let stream = parts.count > 1 ? String(parts[1]) : "unknown"
        let patientID = participant.patientId
        let submission: (surveyID: String, answers: String)?
        var rejected: String?
        if stream == "surveyAnswers" {
            guard parts.count >= 4 else { return text(.ok, "file obviously invalid.") }
            let answers: [SurveyAnswer]
            switch Self.parseAnswers(decrypted.lines) {
            case .success(let value): answers = value
            case .failure(let error): return text(.ok, "file was bad due to '\(error.code)', delete it.")
            }
            // The file name's survey id must be one of this participant's study's surveys (deleted ones included: answers
            // may arrive after a deletion). Anything else is kept as a raw upload, never as answers to a survey.
            let surveyID = String(parts[2])
            let studyID = study.id
            let known = try await store.surveyExists(surveyID, studyID: studyID)
            if known {
                submission = (surveyID, try WireJSON.encodeString(answers))
            } else {
                context.logger.warning("survey answers for a survey not in the participant's study", metadata: [
                    "file_name": "\(LogText.clip(fileName, 120))", "patient_id": "\(participant.patientId)"])
                submission = nil
                rejected = "unknown_survey"
            }
        } else {
            submission = nil
        }
        let content = decrypted.lines.joined(separator: "\n")
        let lineCount = decrypted.lines.count
        let badLines = decrypted.badLines.count
        let upload = UploadRecord(patientID: patientID, fileName: fileName, stream: stream, receivedAt: now.timeIntervalSince1970,
                                  lines: lineCount, badLines: badLines, content: content)
        try await store.storeUpload(upload, submission: submission.map {
            SubmissionRecord(seq: nil, studyId: study.id, patientId: patientID, surveyId: $0.surveyID, fileName: fileName,
                             receivedAt: now.timeIntervalSince1970, answers: $0.answers)
        })
        if let rejected { return text(.ok, "file was bad due to '\(rejected)', delete it.") }
        return text(.ok, "upload successful.")
    }

    static func decrypt(_ file: String, key: RSAKey) -> Result<BeiweFile.Decrypted, CryptoError> {
        do { return .success(try BeiweFile.decrypt(file, privateKey: key)) } catch { return .failure(error) }
    }

    static func parseAnswers(_ lines: [String]) -> Result<[SurveyAnswer], WireFormatError> {
        do { return .success(try SurveyAnswersCSV.parse(lines: lines)) } catch { return .failure(error) }
    }

    // MARK: Other

    func heartbeat(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        let now = study.now(real: context.realNow())
        try await auth.recordDeviceFields(form, patientID: participant.patientId, at: now)
        let message = form["message"]
        if let message { try WireRangeError.check(message, maxLength: WireLimits.freeTextLength, "message") }
        let patientID = participant.patientId
        try await store.recordHeartbeat(patientID: patientID, at: now.timeIntervalSince1970, message: message)
        return JSONResponse.make(["status": "ok"])
    }

    func deviceSettings(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        try await auth.recordDeviceFields(form, patientID: participant.patientId, at: study.now(real: context.realNow()))
        var settings = DeviceSettings.merged(study.settingsObject, id: Self.settingsID(study.id))
        settings["enable_extensive_device_info_tracking"] = false
        return JSONResponse.make(settings)
    }

    func confirmNotifications(_ form: MobileForm) async throws -> Response {
        let (participant, study) = try await auth.authenticate(form)
        _ = try form.require("notification_uuids")
        try await auth.recordDeviceFields(form, patientID: participant.patientId, at: study.now(real: context.realNow()))
        return JSONResponse.empty(.noContent)
    }
}
