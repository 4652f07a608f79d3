import SurveyWire

/// A transform: receives the piped subject first, then the arguments. Errors it throws that are not ``JEXLError``
/// become `transform_error`.
public typealias JEXLTransform = @Sendable ([JSONValue]) throws -> JSONValue

/// Evaluates parsed expressions against a JSON context with jexl-rs 0.4 semantics (reference §2.3):
///
/// - a missing top-level identifier is an error; a missing property after `.` or `[]` is `null`;
/// - `a || b` evaluates `b` when `a` is falsy or an error; `a && b` propagates `a`'s error and returns `a` when falsy;
/// - falsy: `null`, `false`, `0`, `""`; arrays and objects are truthy;
/// - numbers are doubles and `==` of two numbers means closer than 1e-6; strings compare by code point, `+` concatenates;
/// - `in`: substring, array membership, object key; number `in` number is `false`;
/// - `==` across types is `false`, `!=` is its negation; any other operation on mismatched types is an error;
/// - array membership and `==` of arrays and objects are serde_json's equality, where a whole number of the context
///   (an integer) never equals a number the expression made (a float): ``JEXLValue``;
/// - results that are not finite numbers become `null` (as serde_json stores them).
public struct JEXLEvaluator: Sendable {
    public var context: [String: JSONValue]
    public var transforms: [String: JEXLTransform]

    public init(context: [String: JSONValue] = [:], transforms: [String: JEXLTransform] = [:]) {
        self.context = context
        self.transforms = transforms
    }

    /// Parses and evaluates `source`.
    public func evaluate(_ source: String) throws(JEXLError) -> JSONValue {
        try evaluate(try JEXLParser.parse(source))
    }

    /// Evaluates `source` and requires a boolean, as Nimbus targeting does (`not_boolean` otherwise).
    public func evaluateBool(_ source: String) throws(JEXLError) -> Bool {
        try evaluateBool(try JEXLParser.parse(source))
    }

    public func evaluateBool(_ expression: JEXLExpression) throws(JEXLError) -> Bool {
        let value = try value(expression)
        guard case .bool(let result) = value else {
            throw JEXLError(code: "not_boolean", message: "the expression gives \(Self.describe(value)), not a boolean")
        }
        return result
    }

    public func evaluate(_ expression: JEXLExpression) throws(JEXLError) -> JSONValue {
        try value(expression).json
    }

    func value(_ expression: JEXLExpression) throws(JEXLError) -> JEXLValue {
        switch expression {
        case .number(let n): return .number(n)
        case .string(let s): return .string(s)
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .array(let items):
            var values: [JEXLValue] = []
            for item in items { values.append(try value(item)) }
            return .array(values)
        case .object(let entries):
            var object: [String: JEXLValue] = [:]
            for entry in entries {
                guard object[entry.key] == nil else {
                    throw JEXLError(code: "duplicate_object_key", message: "the object literal repeats the key `\(entry.key)`")
                }
                object[entry.key] = try value(entry.value)
            }
            return .object(object)
        case .identifier(let name):
            guard let value = context[name] else {
                throw JEXLError(code: "undefined_identifier", message: "`\(name)` is not in the context")
            }
            // As jexl-eval reads the context: whole numbers are integers.
            return JEXLValue(context: value)
        case .dot(let subject, let name):
            return try value(subject).objectValue?[name] ?? .null
        case .index(let subject, let indexExpression):
            let indexed = try value(subject)
            let index = try value(indexExpression)
            switch index {
            case .string(let key): return indexed.objectValue?[key] ?? .null
            case .integer(let n), .float(let n):
                guard case .array(let items) = indexed else { return .null }
                // Rust's `as usize`: negative and NaN saturate to 0.
                let i = n.isNaN || n < 0 ? 0 : (n >= Double(Int.max) ? Int.max : Int(n.rounded(.down)))
                return i < items.count ? items[i] : .null
            default:
                throw JEXLError(code: "invalid_index_type", message: "an index must be a string or a number, not \(Self.describe(index))")
            }
        case .filter(let subject, let field, let op, let valueExpression):
            let filtered = try value(subject)
            guard case .array(let items) = filtered else {
                throw JEXLError(code: "invalid_filter", message: "a filter `[.\(field) \(op.rawValue) …]` needs an array, not \(Self.describe(filtered))")
            }
            let right = try value(valueExpression)
            var kept: [JEXLValue] = []
            // jexl-eval 0.4.0 leaves out a member whose comparison fails (a field missing or of another type).
            for item in items where (try? Self.apply(op, item.objectValue?[field] ?? .null, right)).map(Self.truthy) ?? false {
                kept.append(item)
            }
            return .array(kept)
        case .binary(.and, let left, let right):
            let l = try value(left)
            return Self.truthy(l) ? try value(right) : l
        case .binary(.or, let left, let right):
            do throws(JEXLError) {
                let l = try value(left)
                if Self.truthy(l) { return l }
            } catch {
                // jexl-rs: an error on the left of `||` is treated as falsy.
            }
            return try value(right)
        case .binary(let op, let left, let right):
            return try Self.apply(op, try value(left), try value(right))
        case .conditional(let condition, let truthy, let falsy):
            // jexl-eval 0.4.0 takes a test that fails to evaluate as false (its `Truthy` for a `Result`): the else branch.
            let test = (try? value(condition)).map(Self.truthy) ?? false
            return test ? try value(truthy) : try value(falsy)
        case .transform(let name, let subject, let args):
            var values = [try value(subject).json]
            for arg in args ?? [] { values.append(try value(arg).json) }
            guard let transform = transforms[name] else {
                throw JEXLError(code: "unknown_transform", message: "no transform named `\(name)`")
            }
            do {
                return JEXLValue(computed: try transform(values))
            } catch let error as JEXLError {
                throw error
            } catch {
                throw JEXLError(code: "transform_error", message: "\(name): \(error)")
            }
        }
    }

    /// JEXL truthiness.
    public static func truthy(_ value: JSONValue) -> Bool { truthy(JEXLValue(context: value)) }

    static func truthy(_ value: JEXLValue) -> Bool {
        switch value {
        case .null: return false
        case .bool(let b): return b
        case .integer(let n), .float(let n): return n != 0
        case .string(let s): return !s.isEmpty
        case .array, .object: return true
        }
    }

    /// A number a transform answers: null when it is not finite (as serde_json stores it).
    static func number(_ n: Double) -> JSONValue { JEXLValue.number(n).json }

    static func describe(_ value: JEXLValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return "the boolean \(b)"
        case .integer(let n), .float(let n): return "the number \(n)"
        case .string(let s): return "the string '\(s)'"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// `==` of the dialect for two context values: numbers within 1e-6, values of one type by value, different types
    /// never.
    public static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool { equal(JEXLValue(context: a), JEXLValue(context: b)) }

    /// `==` of the dialect: two numbers within 1e-6 (of either kind), arrays and objects by serde_json's equality,
    /// other values of one type by value, different types never.
    static func equal(_ a: JEXLValue, _ b: JEXLValue) -> Bool {
        if let x = a.numberValue, let y = b.numberValue { return abs(x - y) < 1e-6 }
        return a == b
    }

    static func less(_ a: String, _ b: String) -> Bool { a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) }

    static func apply(_ op: JEXLOperator, _ left: JEXLValue, _ right: JEXLValue) throws(JEXLError) -> JEXLValue {
        switch op {
        case .and: return truthy(left) ? right : left
        case .or: return truthy(left) ? left : right
        case .equal: return .bool(equal(left, right))
        case .notEqual: return .bool(!equal(left, right))
        default: break
        }
        if let a = left.numberValue, let b = right.numberValue {
            switch op {
            case .add: return .number(a + b)
            case .subtract: return .number(a - b)
            case .multiply: return .number(a * b)
            case .divide: return .number(a / b)
            case .floorDivide: return .number((a / b).rounded(.down))
            case .modulus: return .number(a.truncatingRemainder(dividingBy: b))
            case .exponent: return .number(pow(a, b))
            case .less: return .bool(a < b)
            case .greater: return .bool(a > b)
            case .lessEqual: return .bool(a <= b)
            case .greaterEqual: return .bool(a >= b)
            case .in: return .bool(false)
            case .and, .or, .equal, .notEqual: return .null  // answered above
            }
        }
        switch (op, left, right) {
        case (.add, .string(let a), .string(let b)): return .string(a + b)
        case (.less, .string(let a), .string(let b)): return .bool(less(a, b))
        case (.greater, .string(let a), .string(let b)): return .bool(less(b, a))
        case (.lessEqual, .string(let a), .string(let b)): return .bool(!less(b, a))
        case (.greaterEqual, .string(let a), .string(let b)): return .bool(!less(a, b))
        case (.in, .string(let a), .string(let b)): return .bool(contains(b, a))
        // Membership is serde_json's equality (`Vec::contains`): exact for numbers, an integer never a float.
        case (.in, _, .array(let items)): return .bool(items.contains(left))
        case (.in, .string(let key), .object(let object)): return .bool(object[key] != nil)
        default:
            throw JEXLError(code: "invalid_binary_op", message: "`\(op.rawValue)` cannot combine \(describe(left)) and \(describe(right))")
        }
    }

    /// Byte-wise substring test (Rust's `str::contains`; no Unicode normalisation).
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        let h = Array(haystack.utf8), n = Array(needle.utf8)
        guard !n.isEmpty else { return true }
        guard n.count <= h.count else { return false }
        for start in 0...(h.count - n.count) where h[start] == n[0] {
            if h[start..<(start + n.count)].elementsEqual(n) { return true }
        }
        return false
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
