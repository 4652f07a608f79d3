import ClientSDK
import SurveyWire

/// A device's event as the JSON object `survey-cli device listen` prints and `GET /__devices/{id}/events` answers
/// (`docs/schemas/device-event.schema.json`).
public enum DeviceEventLine {
    /// The `event` name of a client event.
    public static func name(of event: SurveyClientEvent) -> String {
        switch event {
        case .registered: "registered"
        case .pushReceived: "push_received"
        case .duplicateIgnored: "duplicate_ignored"
        case .streamReconnecting: "stream_reconnecting"
        case .surveyAvailable: "survey_available"
        case .surveyWithdrawn: "survey_withdrawn"
        case .submitted: "submitted"
        case .telemetrySent: "telemetry_sent"
        case .error: "error"
        }
    }

    /// Every `event` name a device reports (`listening` is printed by `device listen` itself).
    public static let names: Set<String> = ["registered", "push_received", "duplicate_ignored", "stream_reconnecting", "survey_available",
                                            "survey_withdrawn", "submitted", "telemetry_sent", "error"]

    /// A stored survey's question as `survey_available` lists it, in Beiwe's key names (what to answer, and how).
    static func question(_ question: SurveyQuestion) -> JSONValue {
        var object: [String: JSONValue] = ["question_id": .string(question.id), "question_type": .string(question.kind.rawValue),
                                           "question_text": .string(question.text), "required": .bool(question.isRequired)]
        if !question.options.isEmpty { object["options"] = .array(question.options.map { .string($0) }) }
        if let minimum = question.minimum { object["min"] = .string(minimum) }
        if let maximum = question.maximum { object["max"] = .string(maximum) }
        if let type = question.textFieldType { object["text_field_type"] = .string(type) }
        return .object(object)
    }

    /// The event's object: `event` and its fields.
    public static func object(_ event: SurveyClientEvent) -> [String: JSONValue] {
        switch event {
        case .registered(let study, let scheduling, let zone):
            return ["event": "registered", "study_id": .string(study), "scheduling": .string(scheduling), "timezone": .string(zone)]
        case .pushReceived(let id, let surveys, let sentTime):
            var object: [String: JSONValue] = ["event": "push_received", "message_id": .string(id), "survey_ids": .array(surveys.map { .string($0) })]
            // Study time (the push log's `due_at`), not the real time the event carries by its order: RFC 3339 as the
            // admin API writes times; left out when the push gave none or an unreadable one.
            if let date = WireTime.parse(sentTime + "Z"), sentTime.utf8.count == 19 { object["sent_time"] = .string(WireTime.format(date)) }
            return object
        case .duplicateIgnored(let id):
            return ["event": "duplicate_ignored", "message_id": .string(id)]
        case .streamReconnecting(let reason):
            return ["event": "stream_reconnecting", "reason": .string(reason)]
        case .surveyAvailable(let survey):
            return ["event": "survey_available", "survey_id": .string(survey.surveyID), "name": .string(survey.name),
                    "schedule_uuids": .array(survey.scheduleUUIDs.map { .string($0) }), "received_at": .string(survey.receivedAt),
                    "questions": .array(survey.questions.map(question))]
        case .surveyWithdrawn(let survey, let uuids):
            return ["event": "survey_withdrawn", "survey_id": .string(survey), "schedule_uuids": .array(uuids.map { .string($0) })]
        case .submitted(let survey, let file):
            return ["event": "submitted", "survey_id": .string(survey), "file_name": .string(file)]
        case .telemetrySent(let document, let events, let ping):
            return ["event": "telemetry_sent", "document_id": .string(document), "events": .number(Double(events)), "ping": .string(ping)]
        case .error(let error):
            return failure(error.code, error.message, status: error.status)
        }
    }

    /// An `error` event.
    public static func failure(_ code: String, _ message: String, status: Int? = nil) -> [String: JSONValue] {
        var object: [String: JSONValue] = ["event": "error", "code": .string(code), "message": .string(message)]
        if let status { object["status"] = .number(Double(status)) }
        return object
    }
}
