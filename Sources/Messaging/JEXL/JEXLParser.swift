/// The JEXL dialect Nimbus evaluates (jexl-rs 0.4, reference §2.3), parsed into a tree.
///
/// Grammar, lowest precedence first, every level left-associative:
/// `&&` `||` (one level) · `==` `!=` `>=` `<=` `>` `<` `in` · `+` `-` · `*` `//` `/` · `%` `^` ·
/// `cond ? a : b` (branches at transform level) · `subject|transform(args)` · `a[expr]`, `a.ident`, `a[.field op value]` ·
/// literals, identifiers, `( … )`. There is no unary `!` and no unary minus: both are rejected with a message naming
/// the position, as the real engine would not parse them (bug B7).
public indirect enum JEXLExpression: Sendable, Equatable {
    case number(Double)
    case string(String)
    case bool(Bool)
    case null
    case array([JEXLExpression])
    case object([ObjectEntry])
    case identifier(String)
    case dot(JEXLExpression, String)
    case index(JEXLExpression, JEXLExpression)
    /// `subject[.field op value]`: the elements of an array whose `field` satisfies the comparison.
    case filter(JEXLExpression, field: String, op: JEXLOperator, value: JEXLExpression)
    case binary(JEXLOperator, JEXLExpression, JEXLExpression)
    case conditional(JEXLExpression, JEXLExpression, JEXLExpression)
    /// `subject|name(args)`; `args` is nil when written without parentheses.
    case transform(String, subject: JEXLExpression, args: [JEXLExpression]?)

    public struct ObjectEntry: Sendable, Equatable {
        public var key: String
        public var value: JEXLExpression
    }

    /// Every transform name used, in order of appearance.
    public var transformNames: [String] {
        var names: [String] = []
        visit { if case .transform(let name, _, _) = $0 { names.append(name) } }
        return names
    }

    /// Every top-level identifier read from the context.
    public var identifiers: [String] {
        var names: [String] = []
        visit { if case .identifier(let name) = $0 { names.append(name) } }
        return names
    }

    /// String literals piped into a transform named `transform` (event ids for the event transforms).
    public func literalSubjects(of transform: String) -> [String] {
        var subjects: [String] = []
        visit { if case .transform(let name, .string(let id), _) = $0, name == transform { subjects.append(id) } }
        return subjects
    }

    func visit(_ body: (JEXLExpression) -> Void) {
        body(self)
        switch self {
        case .number, .string, .bool, .null, .identifier: break
        case .array(let items): items.forEach { $0.visit(body) }
        case .object(let entries): entries.forEach { $0.value.visit(body) }
        case .dot(let subject, _): subject.visit(body)
        case .index(let subject, let index): subject.visit(body); index.visit(body)
        case .filter(let subject, _, _, let value): subject.visit(body); value.visit(body)
        case .binary(_, let left, let right): left.visit(body); right.visit(body)
        case .conditional(let c, let a, let b): c.visit(body); a.visit(body); b.visit(body)
        case .transform(_, let subject, let args): subject.visit(body); args?.forEach { $0.visit(body) }
        }
    }
}

/// Binary operators of the dialect.
public enum JEXLOperator: String, Sendable, Equatable {
    case and = "&&", or = "||"
    case equal = "==", notEqual = "!=", greaterEqual = ">=", lessEqual = "<=", greater = ">", less = "<", `in` = "in"
    case add = "+", subtract = "-"
    case multiply = "*", floorDivide = "//", divide = "/"
    case modulus = "%", exponent = "^"
}

/// A JEXL failure with a stable code: `parse_error` (with the 1-based column), `undefined_identifier`,
/// `invalid_binary_op`, `invalid_index_type`, `invalid_filter`, `duplicate_object_key`, `unknown_transform`,
/// `transform_parameter_error`, `not_boolean`.
public struct JEXLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    /// 1-based character column of a parse error.
    public var column: Int?

    public init(code: String, message: String, column: Int? = nil) {
        self.code = code
        self.message = message
        self.column = column
    }

    public var description: String { message }
}

struct JEXLToken: Equatable {
    enum Kind: Equatable {
        case number(Double), string(String), identifier(String), keyword(String), punct(String), end
    }
    var kind: Kind
    /// 0-based character offset.
    var offset: Int
}

/// Splits an expression into tokens as jexl-parser 0.4.0's hand-written lexer does (the one jexl-eval 0.4.0, which
/// Nimbus pins, parses with): keywords `true`, `false`, `null` and `in` only (`Null` and `NULL` are identifiers),
/// identifiers of letters, digits and `_`, and a number's `.` only before a digit (`1.` is `1` and a `.`). A character
/// outside ASCII anywhere in the expression is a `parse_error`: jexl-parser 0.4.0 indexes the text by characters and
/// slices it by bytes, so such an expression panics or is misread there (measured against jexl-eval 0.4.0 built from
/// mozilla/jexl-rs: every one of them failed), and Firefox takes a failed evaluation as not eligible.
struct JEXLLexer {
    static let keywords: Set<String> = ["true", "false", "null", "in"]
    static let punctuation = ["&&", "||", "==", "!=", ">=", "<=", "//", "{}", ">", "<", "+", "-", "*", "/", "%", "^",
                              "?", ":", "|", ".", ",", "(", ")", "[", "]", "{", "}"]

    static func tokens(_ source: String) throws(JEXLError) -> [JEXLToken] {
        let chars = Array(source.unicodeScalars)
        var tokens: [JEXLToken] = []
        var i = 0
        func isDigit(_ c: Unicode.Scalar) -> Bool { c >= "0" && c <= "9" }
        // Rust's `char::is_alphabetic` and `is_alphanumeric` (Alphabetic, or Numeric: Nd, Nl, No).
        func isIdentStart(_ c: Unicode.Scalar) -> Bool { c.properties.isAlphabetic || c == "_" }
        func isIdentPart(_ c: Unicode.Scalar) -> Bool { isIdentStart(c) || c.properties.numericType != nil }
        func fail(_ message: String, at offset: Int) -> JEXLError {
            JEXLError(code: "parse_error", message: "\(message) at column \(offset + 1) of `\(source)`", column: offset + 1)
        }
        if let outside = chars.firstIndex(where: { !$0.isASCII }) {
            throw fail("`\(chars[outside])` is outside ASCII, which Firefox's engine (jexl-eval 0.4.0) cannot read in an "
                       + "expression; put such text in the context and compare with an attribute", at: outside)
        }
        while i < chars.count {
            let c = chars[i]
            if c.properties.isWhitespace { i += 1; continue }
            let start = i
            if isDigit(c) || (c == "." && i + 1 < chars.count && isDigit(chars[i + 1])) {
                if c == "." { i += 1 }
                while i < chars.count, isDigit(chars[i]) { i += 1 }
                // `1.5` and `.5` are numbers; in `1.` the dot is a token of its own (jexl-parser 0.4.0 takes a dot into a
                // number only when a digit follows it, and never a second one).
                if c != ".", i + 1 < chars.count, chars[i] == ".", isDigit(chars[i + 1]) {
                    i += 1
                    while i < chars.count, isDigit(chars[i]) { i += 1 }
                }
                let text = String(String.UnicodeScalarView(chars[start..<i]))
                guard let value = Double(text.hasPrefix(".") ? "0" + text : text) else {
                    throw fail("malformed number `\(text)`", at: start)
                }
                tokens.append(JEXLToken(kind: .number(value), offset: start))
                continue
            }
            if c == "'" || c == "\"" {
                var text = String.UnicodeScalarView()
                i += 1
                var closed = false
                while i < chars.count {
                    let d = chars[i]
                    if d == c { closed = true; i += 1; break }
                    if d == "\\" {
                        // The only escape the grammar has is the string's own quote.
                        guard i + 1 < chars.count, chars[i + 1] == c else {
                            throw fail("a backslash in a string may only escape its quote (\(c))", at: i)
                        }
                        text.append(c)
                        i += 2
                        continue
                    }
                    text.append(d)
                    i += 1
                }
                guard closed else { throw fail("unterminated string", at: start) }
                tokens.append(JEXLToken(kind: .string(String(text)), offset: start))
                continue
            }
            if isIdentStart(c) {
                while i < chars.count, isIdentPart(chars[i]) { i += 1 }
                let word = String(String.UnicodeScalarView(chars[start..<i]))
                tokens.append(JEXLToken(kind: keywords.contains(word) ? .keyword(word) : .identifier(word), offset: start))
                continue
            }
            if c == "!" && !(i + 1 < chars.count && chars[i + 1] == "=") {
                throw fail("unary `!` is not part of the JEXL dialect Nimbus uses (jexl-rs issue #15); write `x == false`", at: i)
            }
            if let op = punctuation.first(where: { p in
                let scalars = Array(p.unicodeScalars)
                return i + scalars.count <= chars.count && Array(chars[i..<(i + scalars.count)]) == scalars
            }) {
                tokens.append(JEXLToken(kind: .punct(op), offset: start))
                i += op.unicodeScalars.count
                continue
            }
            throw fail("unexpected character `\(c)`", at: i)
        }
        tokens.append(JEXLToken(kind: .end, offset: chars.count))
        return tokens
    }
}

/// Recursive-descent parser for the dialect's grammar.
public struct JEXLParser {
    private let source: String
    private let tokens: [JEXLToken]
    private var position = 0
    /// Set when `&&` and `||` appear in one chain without parentheses between them.
    private var mixesAndOr = false
    /// Nesting of `expression()` calls (each bracket level is one).
    private var depth = 0

    /// Parses `source`, or throws `parse_error` naming the column and the expression.
    public static func parse(_ source: String) throws(JEXLError) -> JEXLExpression {
        try parseNoting(source).expression
    }

    /// The most tokens an expression may have. The tree is at most this deep, so evaluating it (recursively) stays far
    /// from any thread's stack limit; Nimbus's longest targeting expressions have a few hundred.
    public static let maxTokens = 2_000
    /// The deepest nesting of parentheses, brackets and braces.
    public static let maxNesting = 64

    /// Parses `source` and reports whether `&&` and `||` meet in one chain without parentheses (`a || b && c`), which
    /// jexl-rs reads as `(a || b) && c` and JavaScript engines as `a || (b && c)`.
    public static func parseNoting(_ source: String) throws(JEXLError) -> (expression: JEXLExpression, mixesAndOr: Bool) {
        let tokens = try JEXLLexer.tokens(source)
        guard tokens.count <= maxTokens + 1 else {
            throw JEXLError(code: "too_complex", message: "the expression has more than \(maxTokens) tokens")
        }
        var parser = JEXLParser(source: source, tokens: tokens)
        let expression = try parser.expression()
        guard case .end = parser.peek.kind else { throw parser.unexpected() }
        return (expression, parser.mixesAndOr)
    }

    private init(source: String, tokens: [JEXLToken]) {
        self.source = source
        self.tokens = tokens
    }

    private var peek: JEXLToken { tokens[position] }

    private mutating func advance() -> JEXLToken {
        let token = tokens[position]
        if position < tokens.count - 1 { position += 1 }
        return token
    }

    private func unexpected(_ expected: String? = nil) -> JEXLError {
        let token = peek
        let found: String
        switch token.kind {
        case .end: found = "end of expression"
        case .number(let n): found = "number \(n)"
        case .string(let s): found = "string '\(s)'"
        case .identifier(let s), .keyword(let s): found = "`\(s)`"
        case .punct(let p): found = "`\(p)`"
        }
        var message = "unexpected \(found)"
        if let expected { message += ", expected \(expected)" }
        if case .punct("-") = token.kind, position == 0 || isOperatorBefore {
            message += " (there is no unary minus; write `0 - x`)"
        }
        return JEXLError(code: "parse_error", message: "\(message) at column \(token.offset + 1) of `\(source)`", column: token.offset + 1)
    }

    private var isOperatorBefore: Bool {
        guard position > 0, case .punct(let p) = tokens[position - 1].kind else { return position > 0 && tokens[position - 1].kind == .keyword("in") }
        return p != ")" && p != "]" && p != "}" && p != "{}"
    }

    private mutating func expect(_ punct: String) throws(JEXLError) {
        guard case .punct(punct) = peek.kind else { throw unexpected("`\(punct)`") }
        _ = advance()
    }

    private func isPunct(_ options: Set<String>) -> String? {
        if case .punct(let p) = peek.kind, options.contains(p) { return p }
        return nil
    }

    mutating func expression() throws(JEXLError) -> JEXLExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxNesting else {
            throw JEXLError(code: "too_complex", message: "the expression nests more than \(Self.maxNesting) levels deep",
                            column: peek.offset + 1)
        }
        var left = try comparison()
        var seen: Set<String> = []
        while let op = isPunct(["&&", "||"]) {
            _ = advance()
            seen.insert(op)
            left = .binary(JEXLOperator(rawValue: op)!, left, try comparison())
        }
        if seen.count == 2 { mixesAndOr = true }
        return left
    }

    private mutating func comparisonOperator() -> JEXLOperator? {
        if let op = isPunct(["==", "!=", ">=", "<=", ">", "<"]) { return JEXLOperator(rawValue: op) }
        if case .keyword("in") = peek.kind { return .in }
        return nil
    }

    private mutating func comparison() throws(JEXLError) -> JEXLExpression {
        var left = try additive()
        while let op = comparisonOperator() {
            _ = advance()
            left = .binary(op, left, try additive())
        }
        return left
    }

    private mutating func additive() throws(JEXLError) -> JEXLExpression {
        var left = try multiplicative()
        while let op = isPunct(["+", "-"]) {
            _ = advance()
            left = .binary(JEXLOperator(rawValue: op)!, left, try multiplicative())
        }
        return left
    }

    private mutating func multiplicative() throws(JEXLError) -> JEXLExpression {
        var left = try power()
        while let op = isPunct(["*", "//", "/"]) {
            _ = advance()
            left = .binary(JEXLOperator(rawValue: op)!, left, try power())
        }
        return left
    }

    private mutating func power() throws(JEXLError) -> JEXLExpression {
        var left = try conditional()
        while let op = isPunct(["%", "^"]) {
            _ = advance()
            left = .binary(JEXLOperator(rawValue: op)!, left, try conditional())
        }
        return left
    }

    private mutating func conditional() throws(JEXLError) -> JEXLExpression {
        var condition = try transformed()
        while isPunct(["?"]) != nil {
            _ = advance()
            let truthy = try transformed()
            try expect(":")
            let falsy = try transformed()
            condition = .conditional(condition, truthy, falsy)
        }
        return condition
    }

    private mutating func transformed() throws(JEXLError) -> JEXLExpression {
        var subject = try member()
        while isPunct(["|"]) != nil {
            _ = advance()
            guard case .identifier(let name) = peek.kind else { throw unexpected("a transform name") }
            _ = advance()
            var args: [JEXLExpression]?
            if isPunct(["("]) != nil {
                _ = advance()
                args = try list(closing: ")")
            }
            subject = .transform(name, subject: subject, args: args)
        }
        return subject
    }

    private mutating func member() throws(JEXLError) -> JEXLExpression {
        var subject = try primary()
        while true {
            if isPunct(["."]) != nil {
                _ = advance()
                guard case .identifier(let name) = peek.kind else { throw unexpected("a property name") }
                _ = advance()
                subject = .dot(subject, name)
            } else if isPunct(["["]) != nil {
                _ = advance()
                if isPunct(["."]) != nil {
                    _ = advance()
                    guard case .identifier(let field) = peek.kind else { throw unexpected("a field name") }
                    _ = advance()
                    guard let op = comparisonOperator() else { throw unexpected("a comparison") }
                    _ = advance()
                    let value = try primary()
                    try expect("]")
                    subject = .filter(subject, field: field, op: op, value: value)
                } else {
                    let index = try expression()
                    try expect("]")
                    subject = .index(subject, index)
                }
            } else {
                return subject
            }
        }
    }

    /// `item, item, ...` with an optional trailing comma, up to `closing`.
    private mutating func list(closing: String) throws(JEXLError) -> [JEXLExpression] {
        var items: [JEXLExpression] = []
        while isPunct([closing]) == nil {
            items.append(try expression())
            if isPunct([","]) != nil { _ = advance() } else { break }
        }
        try expect(closing)
        return items
    }

    private mutating func primary() throws(JEXLError) -> JEXLExpression {
        let token = peek
        switch token.kind {
        case .number(let n): _ = advance(); return .number(n)
        case .string(let s): _ = advance(); return .string(s)
        case .keyword("true"): _ = advance(); return .bool(true)
        case .keyword("false"): _ = advance(); return .bool(false)
        case .keyword("null"): _ = advance(); return .null
        case .identifier(let name): _ = advance(); return .identifier(name)
        case .punct("("):
            _ = advance()
            let inner = try expression()
            try expect(")")
            return inner
        case .punct("["):
            _ = advance()
            return .array(try list(closing: "]"))
        case .punct("{}"):
            _ = advance()
            return .object([])
        case .punct("{"):
            _ = advance()
            var entries: [JEXLExpression.ObjectEntry] = []
            while isPunct(["}"]) == nil {
                let key: String
                switch peek.kind {
                case .string(let s), .identifier(let s): key = s
                default: throw unexpected("an object key")
                }
                _ = advance()
                try expect(":")
                entries.append(.init(key: key, value: try expression()))
                if isPunct([","]) != nil { _ = advance() } else { break }
            }
            try expect("}")
            return .object(entries)
        default:
            throw unexpected("a value")
        }
    }
}
