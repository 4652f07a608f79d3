/// An FCM topic condition (`'a' in topics && ('b' in topics || !('c' in topics))`): parsed once, then evaluated
/// against each device's subscriptions. FCM allows at most five topics in one condition, `&&`, `||`, `!` and
/// parentheses; `&&` binds tighter than `||`. Parsing is bounded: at most ``maxDepth`` nested `!` and parentheses
/// together (a condition of 50,000 `!` overflowed the relay's stack, issue 49), and at most ``maxTopics`` topics.
public indirect enum TopicCondition: Equatable, Sendable {
    case topic(String)
    case not(TopicCondition)
    case and(TopicCondition, TopicCondition)
    case or(TopicCondition, TopicCondition)

    /// FCM's limit on the topics one condition names.
    public static let maxTopics = 5
    /// The deepest nesting of `!` and parentheses taken (five topics need far less).
    public static let maxDepth = 16

    /// Why a condition was refused.
    public struct Invalid: Error, Equatable {
        /// What is wrong, for the error message.
        public var reason: String
    }

    /// Parses `text`; throws when it is not a condition FCM takes.
    public init(_ text: String) throws(Invalid) {
        var parser = Parser(bytes: Array(text.utf8))
        let condition = try parser.or()
        parser.skipSpaces()
        guard parser.index == parser.bytes.count else { throw Invalid(reason: "unexpected text at \(parser.index)") }
        guard parser.topics <= Self.maxTopics else { throw Invalid(reason: "more than \(Self.maxTopics) topics") }
        self = condition
    }

    /// Whether a device subscribed to `topics` matches.
    public func matches(_ topics: Set<String>) -> Bool {
        switch self {
        case .topic(let name): topics.contains(name)
        case .not(let inner): !inner.matches(topics)
        case .and(let a, let b): a.matches(topics) && b.matches(topics)
        case .or(let a, let b): a.matches(topics) || b.matches(topics)
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var topics = 0
        var depth = 0

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        }

        mutating func take(_ token: String) -> Bool {
            skipSpaces()
            let expected = Array(token.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else { return false }
            index += expected.count
            return true
        }

        mutating func or() throws(Invalid) -> TopicCondition {
            var left = try and()
            while take("||") { left = .or(left, try and()) }
            return left
        }

        mutating func and() throws(Invalid) -> TopicCondition {
            var left = try unary()
            while take("&&") { left = .and(left, try unary()) }
            return left
        }

        mutating func unary() throws(Invalid) -> TopicCondition {
            if take("!") {
                try enter()
                defer { depth -= 1 }
                return .not(try unary())
            }
            if take("(") {
                try enter()
                let inner = try or()
                guard take(")") else { throw Invalid(reason: "a ( is not closed") }
                depth -= 1
                return inner
            }
            return try topic()
        }

        /// One level deeper: `!` and `(` both recurse, so both count.
        mutating func enter() throws(Invalid) {
            depth += 1
            guard depth <= TopicCondition.maxDepth else { throw Invalid(reason: "too deeply nested") }
        }

        /// `'name' in topics` (single or double quotes).
        mutating func topic() throws(Invalid) -> TopicCondition {
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "'") || bytes[index] == UInt8(ascii: "\"") else {
                throw Invalid(reason: "a topic name in quotes expected at \(index)")
            }
            let quote = bytes[index]
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != quote { index += 1 }
            guard index < bytes.count else { throw Invalid(reason: "a topic name is not closed") }
            let name = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            guard FCMTopic.isValidName(name) else { throw Invalid(reason: "'\(name)' is not a topic name") }
            guard take("in"), take("topics") else { throw Invalid(reason: "'in topics' expected after '\(name)'") }
            topics += 1
            return .topic(name)
        }
    }
}

/// FCM topic names.
public enum FCMTopic {
    /// The name of `topic` without FCM's optional `/topics/` prefix, when it is a valid name (`[a-zA-Z0-9-_.~%]+`).
    public static func name(_ topic: String) -> String? {
        let name = topic.hasPrefix("/topics/") ? String(topic.dropFirst("/topics/".count)) : topic
        return isValidName(name) ? name : nil
    }

    /// Whether `name` is a topic name FCM takes (1-900 bytes of `[a-zA-Z0-9-_.~%]`).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 900 && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"): true
            default: false
            }
        }
    }
}
