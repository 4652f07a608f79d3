import Foundation
import Hummingbird
import Scheduling
import ServerSupport
import SurveyWire

extension ScheduleError: APIErrorConvertible {
    package var apiError: APIError { APIError(.badRequest, code: code, "schedule: \(message)", field: field) }
}

/// Checks on admin request bodies that JSON decoding alone does not make.
enum AdminValidation {
    static let studyKeys: Set<String> = ["name", "timezone", "scheduling", "device_settings", "clock", "max_delay_minutes", "per_participant_keys",
                                         "interventions"]
    static let surveyKeys: Set<String> = ["name", "survey_type", "content", "settings", "schedules"]
    static let questionTypes: Set<String> = ["info_text_box", "slider", "radio_button", "checkbox", "free_response", "date", "time", "date_time"]
    static let textFieldTypes: Set<String> = ["NUMERIC", "SINGLE_LINE_TEXT", "MULTI_LINE_TEXT"]

    /// Reads a JSON object body, rejecting keys outside `allowed`, then decodes it.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, allowed: Set<String>, limit: Int) async throws -> T {
        try await request.decodeJSON(type, allowedKeys: allowed, limit: limit)
    }

    static func study(_ body: AdminWire.CreateStudy) throws {
        guard !isBlank(body.name) else { throw MockServerError.badField("name", "name must not be empty or only white space") }
        guard ["server", "device"].contains(body.scheduling) else {
            throw MockServerError.badField("scheduling", "scheduling must be \"server\" or \"device\"")
        }
        if let zone = body.timezone, !ZoneName.isValid(zone) {
            throw MockServerError.badField("timezone", "'\(zone)' is not a tz database name", code: "invalid_timezone")
        }
        if let minutes = body.maxDelayMinutes, minutes < 1 {
            throw MockServerError.badField("max_delay_minutes", "max_delay_minutes must be at least 1")
        }
        if let clock = body.clock, WireTime.parse(clock.frozenAt) == nil {
            throw MockServerError.badField("clock.frozen_at", "frozen_at must be an RFC 3339 time")
        }
        for name in body.interventions ?? [] where name.isEmpty || name.unicodeScalars.count > 100 {
            throw MockServerError.badField("interventions", "intervention names must be 1-100 characters")
        }
        for key in (body.deviceSettings ?? [:]).keys.sorted() where DeviceSettings.defaults[key] == nil {
            throw MockServerError.badField("device_settings.\(key)", "'\(key)' is not a Beiwe device setting", code: "unknown_field")
        }
    }

    /// White space as JSON Schema patterns (ECMAScript's `\\s`) define it, so the document's `"pattern": "\\S"` states the rule.
    static let whiteSpace: Set<Unicode.Scalar> = Set("\t\n\u{0B}\u{0C}\r \u{A0}\u{1680}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}".unicodeScalars)
        .union((0x2000...0x200A).compactMap(Unicode.Scalar.init))

    /// Empty, or nothing but white space.
    static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { whiteSpace.contains($0) }
    }

    static func survey(_ body: AdminWire.CreateSurvey, interventions: Set<String>) throws {
        guard !body.name.isEmpty else { throw MockServerError.badField("name", "name must not be empty") }
        guard SurveyEntry.surveyTypes.contains(body.surveyType) else {
            throw MockServerError.badField("survey_type", "survey_type must be tracking_survey or audio_survey")
        }
        if let settings = body.settings, settings.objectValue == nil {
            throw MockServerError.badField("settings", "settings must be an object")
        }
        var ids = Set<String>()
        for (index, question) in body.content.enumerated() {
            let field = "content[\(index)]"
            guard let q = question.objectValue else { throw MockServerError.badField(field, "each question must be an object") }
            guard let id = q["question_id"]?.stringValue, !id.isEmpty else {
                throw MockServerError.badField("\(field).question_id", "question_id is required")
            }
            guard ids.insert(id).inserted else { throw MockServerError.badField("\(field).question_id", "duplicate question_id '\(id)'") }
            guard let type = q["question_type"]?.stringValue, questionTypes.contains(type) else {
                throw MockServerError.badField("\(field).question_type", "question_type must be one of \(questionTypes.sorted().joined(separator: ", "))")
            }
            if type == "free_response", let t = q["text_field_type"]?.stringValue, !textFieldTypes.contains(t) {
                throw MockServerError.badField("\(field).text_field_type", "text_field_type must be NUMERIC, SINGLE_LINE_TEXT or MULTI_LINE_TEXT")
            }
            if type == "radio_button" || type == "checkbox" {
                guard let answers = q["answers"]?.arrayValue, answers.allSatisfy({ $0["text"]?.stringValue != nil }) else {
                    throw MockServerError.badField("\(field).answers", "\(type) needs answers: [{\"text\": ...}]")
                }
            }
        }
        for (index, schedule) in body.schedules.enumerated() {
            do { try schedule.validate() } catch { throw error.apiError }
            if case .relative(_, _, .intervention(let name)) = schedule, !interventions.contains(name) {
                throw MockServerError.badField("schedules[\(index)].anchor", "the study has no intervention named '\(name)'",
                                               code: "unknown_intervention")
            }
        }
    }

    static let patientIDCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789")

    static func patientID(_ id: String) throws {
        guard (1...32).contains(id.count), id.allSatisfy({ patientIDCharacters.contains($0) }) else {
            throw MockServerError.badField("patient_id", "patient_id must be 1-32 characters of a-z and 0-9")
        }
    }
}
