import Foundation

/// Any JSON value. Used for the parts of the wire format that are open-ended (survey content, settings,
/// telemetry metrics, push payloads) so they round-trip without loss.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else if let o = try? c.decode([String: JSONValue].self) { self = .object(o) }
        else { throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a JSON value") }
    }

    /// Encodes the value as the JSON it holds.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n):
            if n.rounded() == n, abs(n) < 9.0e15 { try c.encode(Int64(n)) } else { try c.encode(n) }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The number, if this is a number.
    public var numberValue: Double? { if case .number(let n) = self { n } else { nil } }
    /// The bool, if this is a bool.
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// Member lookup on objects; nil for other kinds or a missing key.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    /// A JSON string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A JSON number.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A JSON number.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A JSON array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A JSON object (a later duplicate key wins).
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// JSON `null`.
    public init(nilLiteral: ()) { self = .null }
}

/// Shared JSON coding conventions: sorted keys for stable output, no slash escaping.
public enum WireJSON {
    /// Encodes a value as compact JSON bytes with sorted keys.
    public static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// Encodes a value as compact JSON text with sorted keys.
    public static func encodeString(_ value: some Encodable) throws -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    /// Decodes JSON bytes into a value.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try JSONDecoder().decode(type, from: data)
    }

    /// Decodes JSON bytes with `fast` (a reader built on `JSONParser`, for hot paths), or with a `JSONDecoder` when
    /// `fast` refuses them: `JSONParser` refuses a few texts `JSONDecoder` takes, so what is accepted stays the same, and
    /// the errors thrown are `JSONDecoder`'s.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8],
                                            fast: ([UInt8]) throws(JSONParser.Failure) -> T) throws -> T {
        if let value = try? fast(bytes) { return value }
        return try JSONDecoder().decode(type, from: Data(bytes))
    }

    /// Decodes JSON text into a value.
    public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

extension JSONValue {
    /// Compact JSON text with object keys sorted, slashes not escaped, and integral numbers written without a fraction
    /// (`1` for 1.0): what `WireJSON` produces, without the cost of a `JSONEncoder`, and serde_json's form of the same
    /// value (which Nimbus's sampling hash depends on).
    public var compactText: String { String(decoding: compactBytes, as: UTF8.self) }

    /// ``compactText`` as UTF-8 bytes (what goes on the wire).
    public var compactBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        JSONValue.write(self, to: &out)
        return out
    }

    static func write(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): writeNumber(n, to: &out)
        case .string(let s): appendString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, key) in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(object[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeNumber(_ n: Double, to out: inout [UInt8]) {
        if n.rounded() == n, abs(n) < 1e17 { out.append(contentsOf: String(Int64(n)).utf8) } else { out.append(contentsOf: "\(n)".utf8) }
    }

    /// Appends `string` as a JSON string, the way ``compactText`` writes strings: quote, backslash and control characters
    /// escaped (`\n`, `\u001f`, ...), everything else as its UTF-8 bytes. For writers that lay out a known shape
    /// themselves instead of building a `JSONValue` tree.
    public static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
