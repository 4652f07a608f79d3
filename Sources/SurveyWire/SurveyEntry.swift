/// One survey as the mobile API serves it (PROTOCOL.md §1.2).
///
/// `/download_surveys` entries carry `timings`; the per-survey `/download_survey` entry does not.
public struct SurveyEntry: Codable, Sendable, Equatable {
    /// 24-hex survey id (Beiwe's Mongo-era `_id`).
    public var id: String
    /// The survey's display name.
    public var name: String
    /// `tracking_survey` or `audio_survey`.
    public var surveyType: String
    /// Question objects, kept as JSON so unknown question keys survive.
    public var content: [JSONValue]
    /// Survey settings object.
    public var settings: JSONValue
    /// 7 lists (index 0 = Sunday) of seconds after local midnight; nil when not served.
    public var timings: [[Int]]?

    enum CodingKeys: String, CodingKey {
        case id = "_id", name, surveyType = "survey_type", content, settings, timings
    }

    /// Creates the value from its fields.
    public init(id: String, name: String, surveyType: String, content: [JSONValue], settings: JSONValue, timings: [[Int]]? = nil) {
        self.id = id
        self.name = name
        self.surveyType = surveyType
        self.content = content
        self.settings = settings
        self.timings = timings
    }

    /// The survey types Beiwe serves.
    public static let surveyTypes: Set<String> = ["tracking_survey", "audio_survey"]
}

/// A participant's answer to one question, as written to the answers CSV and shown by the admin API.
public struct SurveyAnswer: Codable, Sendable, Equatable {
    /// The question's id.
    public var questionID: String
    /// Beiwe's question type (such as `radio_button` or `free_response`).
    public var questionType: String
    /// The question as shown.
    public var questionText: String
    /// Beiwe's `question answer options` column (e.g. `[Yes; No]`); empty when none.
    public var answerOptions: String
    /// The answer given, as the device wrote it.
    public var answer: String

    enum CodingKeys: String, CodingKey {
        case questionID = "question_id", questionType = "question_type", questionText = "question_text"
        case answerOptions = "answer_options", answer
    }

    /// Creates the value from its fields.
    public init(questionID: String, questionType: String, questionText: String, answerOptions: String = "", answer: String) {
        self.questionID = questionID
        self.questionType = questionType
        self.questionText = questionText
        self.answerOptions = answerOptions
        self.answer = answer
    }
}

/// The survey answers file of Beiwe (`<patient>_surveyAnswers_<survey>_<ms>.csv`).
public enum SurveyAnswersCSV {
    /// The header line Beiwe writes.
    public static let header = "question id,question type,question text,question answer options,answer"

    /// The file's lines: header, then one line per answer.
    public static func lines(for answers: [SurveyAnswer]) -> [String] {
        [header] + answers.map { a in
            [a.questionID, a.questionType, a.questionText, a.answerOptions, a.answer].map(CSV.field).joined(separator: ",")
        }
    }

    /// Parses decrypted lines back into answers. Throws when the header is not Beiwe's or a row is malformed.
    public static func parse(lines: [String]) throws(WireFormatError) -> [SurveyAnswer] {
        guard let first = lines.first, first.trimmingSpaces() == header else {
            throw WireFormatError(code: "bad_csv_header", message: "the answers file does not start with Beiwe's header")
        }
        var answers: [SurveyAnswer] = []
        for (offset, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            let f = try CSV.parseRow(line)
            guard f.count == 5 else {
                throw WireFormatError(code: "bad_csv_row", message: "line \(offset + 1) has \(f.count) fields, expected 5")
            }
            answers.append(SurveyAnswer(questionID: f[0], questionType: f[1], questionText: f[2], answerOptions: f[3], answer: f[4]))
        }
        return answers
    }

    /// The upload file name for a survey's answers.
    public static func fileName(patientID: String, surveyID: String, epochMillis: Int64) -> String {
        "\(patientID)_surveyAnswers_\(surveyID)_\(epochMillis).csv"
    }
}

/// A malformed wire document, with a stable code.
public struct WireFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable snake_case code.
    public var code: String
    /// Human-readable explanation.
    public var message: String
    /// Creates the value from its fields.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

/// Minimal RFC 4180 CSV for single lines (no embedded newlines).
public enum CSV {
    /// Quotes a field when it holds a comma, quote or leading/trailing space.
    public static func field(_ value: String) -> String {
        if value.contains(",") || value.contains("\"") || value.hasPrefix(" ") || value.hasSuffix(" ") {
            return "\"" + value.replacingAll("\"", with: "\"\"") + "\""
        }
        return value
    }

    /// Splits one CSV line into fields.
    public static func parseRow(_ line: String) throws(WireFormatError) -> [String] {
        var fields: [String] = []
        var current = ""
        var inQuotes = false
        var chars = Array(line)
        if chars.last == "\r" { chars.removeLast() }
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if inQuotes {
                if c == "\"" {
                    if i + 1 < chars.count, chars[i + 1] == "\"" { current.append("\""); i += 1 } else { inQuotes = false }
                } else {
                    current.append(c)
                }
            } else if c == "\"" && current.isEmpty {
                inQuotes = true
            } else if c == "," {
                fields.append(current); current = ""
            } else {
                current.append(c)
            }
            i += 1
        }
        guard !inQuotes else { throw WireFormatError(code: "bad_csv_row", message: "unterminated quoted field") }
        fields.append(current)
        return fields
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
