/// The data of a scheduled survey push (PROTOCOL.md §1.4). Every value on the wire is a string.
public struct SurveyPush: Sendable, Equatable {
    /// Survey ids due, de-duplicated, in order.
    public var surveyIDs: [String]
    /// Beiwe's `sent_time`: `%Y-%m-%dT%H:%M:%S`, UTC, no zone.
    public var sentTime: String
    /// 32 alphanumerics that defeat notification de-duplication.
    public var nonce: String
    /// Schedule uuids per survey id.
    public var surveyUUIDs: [String: [String]]

    /// Creates the push's fields.
    public init(surveyIDs: [String], sentTime: String, nonce: String, surveyUUIDs: [String: [String]]) {
        self.surveyIDs = surveyIDs
        self.sentTime = sentTime
        self.nonce = nonce
        self.surveyUUIDs = surveyUUIDs
    }

    /// The FCM-style data dictionary: `type`, `survey_ids`, `sent_time`, `nonce`, `survey_uuids_dict`.
    public func dataFields() -> [String: String] {
        [
            "type": "survey",
            "survey_ids": (try? WireJSON.encodeString(surveyIDs)) ?? "[]",
            "sent_time": sentTime,
            "nonce": nonce,
            "survey_uuids_dict": (try? WireJSON.encodeString(surveyUUIDs)) ?? "{}",
        ]
    }

    /// Reads a push's data fields. Tolerant where Beiwe's apps crash: a missing or malformed
    /// `survey_uuids_dict` or `sent_time` is accepted (empty); a missing `type` or unparsable
    /// `survey_ids` is an error, as the Android app ignores such pushes.
    public init(dataFields data: [String: String]) throws(WireFormatError) {
        guard data["type"] == "survey" else {
            throw WireFormatError(code: "not_a_survey_push", message: "push type is \(data["type"] ?? "missing")")
        }
        guard let idsText = data["survey_ids"], let ids = try? WireJSON.decode([String].self, from: idsText) else {
            throw WireFormatError(code: "bad_survey_ids", message: "survey_ids is not a JSON list of strings")
        }
        surveyIDs = ids
        sentTime = data["sent_time"] ?? ""
        nonce = data["nonce"] ?? ""
        surveyUUIDs = data["survey_uuids_dict"].flatMap { try? WireJSON.decode([String: [String]].self, from: $0) } ?? [:]
    }

    /// Every schedule uuid in the push.
    public var allUUIDs: [String] { surveyUUIDs.keys.sorted().flatMap { surveyUUIDs[$0] ?? [] } }

    /// Extracts data fields from a relay payload: an FCM data object, or an APNs body whose custom
    /// top-level keys (everything but `aps`) carry the data.
    public static func dataFields(fromRelayPayload payload: JSONValue) -> [String: String] {
        guard let object = payload.objectValue else { return [:] }
        var out: [String: String] = [:]
        for (key, value) in object where key != "aps" {
            if let s = value.stringValue { out[key] = s }
        }
        return out
    }
}
