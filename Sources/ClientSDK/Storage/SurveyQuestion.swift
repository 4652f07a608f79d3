import SurveyWire

/// One question of a stored survey, read from the spec Beiwe's `/download_survey` serves (a `content` item).
///
/// Beiwe's survey builder defines the keys: `question_id`, `question_text` (the iOS app also reads `prompt`),
/// `question_type`, `required`; `answers` (`[{"text": …}]`) for radio buttons and checkboxes, `min` and `max` for
/// sliders (strings, as the server sends them for the iOS app), `text_field_type` for free responses. A question
/// without an id or a type is not one (Beiwe's apps skip it too). The spec itself is stored as served, so keys this
/// type does not read (`display_if`, keys of later versions) are kept on disk.
public struct SurveyQuestion: Sendable, Equatable {
    /// A question type. A type this SDK does not know is kept as sent.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The type as Beiwe writes it (`radio_button`).
        public let rawValue: String
        /// Wraps a type as Beiwe writes it.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The type as Beiwe writes it.
        public var description: String { rawValue }

        /// Text shown to the participant; takes no answer.
        public static let infoTextBox = Kind(rawValue: "info_text_box")
        /// A number between ``SurveyQuestion/minimum`` and ``SurveyQuestion/maximum``.
        public static let slider = Kind(rawValue: "slider")
        /// One of ``SurveyQuestion/options``.
        public static let radioButton = Kind(rawValue: "radio_button")
        /// Any of ``SurveyQuestion/options``.
        public static let checkbox = Kind(rawValue: "checkbox")
        /// Text of the kind ``SurveyQuestion/textFieldType`` names.
        public static let freeResponse = Kind(rawValue: "free_response")
        /// A date (the builder and the iOS app have it; the server's list of types does not).
        public static let date = Kind(rawValue: "date")
        /// A time of day (as `date`).
        public static let time = Kind(rawValue: "time")
        /// A date and a time (as `date`).
        public static let dateTime = Kind(rawValue: "date_time")
    }

    /// `question_id`: the key of its answer in ``SurveyClient/submit(answers:for:)``.
    public var id: String
    /// `question_type`.
    public var kind: Kind
    /// `question_text` (or `prompt`); empty when neither is there.
    public var text: String
    /// The texts of `answers`, in order (radio buttons and checkboxes; empty otherwise).
    public var options: [String]
    /// A slider's `min`, as sent.
    public var minimum: String?
    /// A slider's `max`, as sent.
    public var maximum: String?
    /// A free response's `text_field_type` (`NUMERIC`, `SINGLE_LINE_TEXT`, `MULTI_LINE_TEXT`).
    public var textFieldType: String?
    /// `required` (false when absent, as in the builder).
    public var isRequired: Bool
    /// Whether the item had an `answers` list (an empty one still makes the `[]` column of an upload).
    private var listsAnswers: Bool

    /// Whether the question takes an answer (all but info text boxes; their rows are left out of an upload).
    public var takesAnswer: Bool { kind != .infoTextBox }

    /// Reads a `content` item; nil when it has no `question_id` or `question_type`.
    init?(_ item: JSONValue) {
        guard let id = item["question_id"]?.stringValue, let type = item["question_type"]?.stringValue else { return nil }
        self.id = id
        kind = Kind(rawValue: type)
        text = item["question_text"]?.stringValue ?? item["prompt"]?.stringValue ?? ""
        let answers = item["answers"]?.arrayValue
        listsAnswers = answers != nil
        options = answers?.compactMap { $0["text"]?.stringValue } ?? []
        minimum = item["min"]?.stringValue
        maximum = item["max"]?.stringValue
        textFieldType = item["text_field_type"]?.stringValue
        isRequired = item["required"]?.boolValue ?? false
    }

    /// The `answer_options` column of Beiwe's survey answers file: `[a; b]` for listed answers, `min - max` for a
    /// slider, else empty.
    var answerOptions: String {
        if listsAnswers { return "[" + options.joined(separator: "; ") + "]" }
        if let minimum, let maximum { return "\(minimum) - \(maximum)" }
        return ""
    }
}
