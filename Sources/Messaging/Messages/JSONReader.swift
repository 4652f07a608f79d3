import SurveyWire

/// A recipe problem with a stable code (`invalid_recipe`, `unknown_key`, `wrong_type`, `malformed_message`, ...).
public struct MessagingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// Reads one JSON object strictly: only the listed keys, each of the expected type.
struct JSONReader {
    let object: [String: JSONValue]
    let path: String

    /// Known misspellings, to say what was meant.
    static let hints = ["trigger": "trigger-if-all", "triggers": "trigger-if-all", "except": "except-if-any",
                        "button_label": "button-label", "buttonLabel": "button-label", "is_control": "is-control",
                        "microsurvey-config": "microsurveyConfig", "max_display_count": "max-display-count",
                        "utm_content": "utm-content", "type": "onboarding-type", "cardType": "card-type"]

    init(_ value: JSONValue, path: String, allowed: Set<String>) throws(MessagingError) {
        guard case .object(let object) = value else {
            throw MessagingError(code: "wrong_type", message: "\(path) must be an object")
        }
        for key in object.keys.sorted() where !allowed.contains(key) {
            var message = "\(path) has an unknown key `\(key)`"
            if let hint = Self.hints[key], allowed.contains(hint) { message += " (did you mean `\(hint)`?)" }
            throw MessagingError(code: "unknown_key", message: message)
        }
        self.object = object
        self.path = path
    }

    func has(_ key: String) -> Bool { object[key] != nil && object[key] != .null }

    func wrongType(_ key: String, _ expected: String) -> MessagingError {
        MessagingError(code: "wrong_type", message: "\(path).\(key) must be \(expected)")
    }

    func string(_ key: String) throws(MessagingError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw wrongType(key, "a string")
        }
    }

    func string(_ key: String, default value: String) throws(MessagingError) -> String { try string(key) ?? value }

    func bool(_ key: String, default value: Bool) throws(MessagingError) -> Bool {
        switch object[key] {
        case nil, .null?: return value
        case .bool(let b)?: return b
        default: throw wrongType(key, "true or false")
        }
    }

    func int(_ key: String, default value: Int) throws(MessagingError) -> Int {
        switch object[key] {
        case nil, .null?: return value
        case .number(let n)? where n.rounded() == n && abs(n) < 1e15: return Int(n)
        default: throw wrongType(key, "a whole number")
        }
    }

    func strings(_ key: String) throws(MessagingError) -> [String]? {
        switch object[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            var out: [String] = []
            for item in items {
                guard case .string(let s) = item else { throw wrongType(key, "a list of strings") }
                out.append(s)
            }
            return out
        default: throw wrongType(key, "a list of strings")
        }
    }

    func stringMap(_ key: String) throws(MessagingError) -> [String: String]? {
        switch object[key] {
        case nil, .null?: return nil
        case .object(let map)?:
            var out: [String: String] = [:]
            for (k, v) in map {
                guard case .string(let s) = v else { throw wrongType(key, "an object of strings") }
                out[k] = s
            }
            return out
        default: throw wrongType(key, "an object of strings")
        }
    }

    func objectMap(_ key: String) throws(MessagingError) -> [String: JSONValue]? {
        switch object[key] {
        case nil, .null?: return nil
        case .object(let map)?: return map
        default: throw wrongType(key, "an object")
        }
    }
}
