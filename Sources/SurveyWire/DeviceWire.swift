/// The devices API (`survey-cli devices serve`, PROTOCOL.md §8): many simulated devices in one process, over HTTP.
public enum DeviceWire {
    /// `POST /__devices`: a device to register and run.
    public struct Create: Codable, Sendable, Equatable {
        /// The participant's id.
        public var patientID: String
        /// The participant's temporary password.
        public var password: String
        /// The device's time zone (tz database name).
        public var timezone: String
        /// `android` (default) or `ios`.
        public var platform: String?
        /// `os_version` sent on every request (at most 16 characters; default the host's).
        public var osVersion: String?
        /// Where pings go (default: kept queued).
        public var telemetryURL: String?
        /// Where feature values come from (default: none fetched).
        public var featuresURL: String?
        /// Answer every survey as soon as it is available.
        public var autoAnswer: Bool?
        /// The answer `auto_answer` gives every question (default `1`).
        public var answerValue: String?

        enum CodingKeys: String, CodingKey {
            case patientID = "patient_id", password, timezone, platform, osVersion = "os_version", telemetryURL = "telemetry_url"
            case featuresURL = "features_url", autoAnswer = "auto_answer", answerValue = "answer_value"
        }

        /// The keys a body may have (others are refused).
        public static let allowedKeys: Set<String> = ["patient_id", "password", "timezone", "platform", "os_version", "telemetry_url",
                                                      "features_url", "auto_answer", "answer_value"]

        /// Creates the value from its fields.
        public init(patientID: String, password: String, timezone: String, platform: String? = nil, osVersion: String? = nil,
                    telemetryURL: String? = nil, featuresURL: String? = nil, autoAnswer: Bool? = nil, answerValue: String? = nil) {
            self.patientID = patientID
            self.password = password
            self.timezone = timezone
            self.platform = platform
            self.osVersion = osVersion
            self.telemetryURL = telemetryURL
            self.featuresURL = featuresURL
            self.autoAnswer = autoAnswer
            self.answerValue = answerValue
        }
    }

    /// `POST /__devices/{id}/answers`: answers to a stored survey, uploaded before the call answers.
    public struct Answers: Codable, Sendable, Equatable {
        /// The stored survey answered.
        public var surveyID: String
        /// Answer text by question id (questions left out are sent empty).
        public var answers: [String: String]
        enum CodingKeys: String, CodingKey { case surveyID = "survey_id", answers }
        /// Creates the value from its fields.
        public init(surveyID: String, answers: [String: String]) {
            self.surveyID = surveyID
            self.answers = answers
        }
    }

    /// `GET /__devices/{id}/events`: the device's event lines after `after`, each with its `seq`.
    public struct Events: Codable, Sendable, Equatable {
        /// Event objects (`seq`, `event` and the event's fields, as `survey-cli device listen` prints them).
        public var events: [JSONValue]
        /// The `after` to ask with next: the last `seq` answered (or the one asked with, when none came).
        public var next: Int
        /// Creates the value from its fields.
        public init(events: [JSONValue], next: Int) {
            self.events = events
            self.next = next
        }
    }
}
