import SurveyWire

/// A value as jexl-eval 0.4.0 holds it while it evaluates (serde_json's `Value`): a number is an integer or a float,
/// and JSON equality — array membership (`in`) and `==` of arrays and objects — never takes an integer for a float.
///
/// Numbers the expression makes (its literals, the results of arithmetic and of transforms) are floats; a number of
/// the context with no fractional part is an integer, as serde_json reads the whole numbers Firefox's app code writes
/// (measured against jexl-eval 0.4.0: with `zero` = 0 and `list` = [1, 2, 3] in the context, `zero == 0` is true but
/// `zero in [0]`, `1 in list` and `list == [1, 2, 3]` are false). Comparisons and arithmetic read both kinds as doubles.
enum JEXLValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A whole number as serde_json reads one from JSON text (`PosInt`/`NegInt`).
    case integer(Double)
    case float(Double)
    case string(String)
    case array([JEXLValue])
    case object([String: JEXLValue])

    /// The value of a context attribute: whole numbers within 64 bits are integers.
    init(context value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n):
            self = n.rounded(.towardZero) == n && n >= -9.223372036854775808e18 && n < 1.8446744073709551616e19 ? .integer(n) : .float(n)
        case .string(let s): self = .string(s)
        case .array(let items): self = .array(items.map(JEXLValue.init(context:)))
        case .object(let members): self = .object(members.mapValues(JEXLValue.init(context:)))
        }
    }

    /// A number the expression made: a float, or null when it is not finite (as serde_json stores it).
    static func number(_ n: Double) -> JEXLValue { n.isFinite ? .float(n) : .null }

    /// A transform's answer: numbers in it are floats, as arithmetic's.
    init(computed value: JSONValue) {
        switch value {
        case .number(let n): self = .number(n)
        case .array(let items): self = .array(items.map(JEXLValue.init(computed:)))
        case .object(let members): self = .object(members.mapValues(JEXLValue.init(computed:)))
        default: self.init(context: value)
        }
    }

    var json: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .integer(let n), .float(let n): return .number(n)
        case .string(let s): return .string(s)
        case .array(let items): return .array(items.map(\.json))
        case .object(let members): return .object(members.mapValues(\.json))
        }
    }

    /// The number, of either kind.
    var numberValue: Double? {
        switch self {
        case .integer(let n), .float(let n): return n
        default: return nil
        }
    }

    var objectValue: [String: JEXLValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// serde_json's equality: an integer never equals a float; strings byte by byte (Rust compares bytes, Swift's `==`
    /// would take canonically equivalent spellings as one).
    static func == (a: JEXLValue, b: JEXLValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.integer(let x), .integer(let y)), (.float(let x), .float(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0 == $1 }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { $0 == value } ?? false }
        default: return false
        }
    }
}
