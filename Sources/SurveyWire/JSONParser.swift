/// A strict RFC 8259 JSON parser into ``JSONValue``, for hot paths where a `JSONDecoder` costs too much (the relay's
/// provider routes decode a body per push).
///
/// It accepts what `JSONDecoder` accepts and refuses what it refuses: whitespace is space, tab, CR and LF; strings are
/// valid UTF-8 without raw control characters, with the JSON escapes and `\u` surrogate pairs (a lone surrogate is
/// refused); numbers follow the JSON grammar and must be finite as a `Double`; nesting is limited to
/// ``maxDepth`` levels; nothing but whitespace may follow the value.
///
/// It never accepts what `JSONDecoder` refuses, but refuses a few things `JSONDecoder` takes: UTF-16 and UTF-32 (detected
/// from NUL bytes; JSON on the network is UTF-8, RFC 8259 §8.1), trailing commas, duplicate member names, and zeros
/// written with an exponent (`0.0e5`; `JSONDecoder` takes some and refuses others). Callers that must accept all that
/// `JSONDecoder` does fall back to it when this parser refuses; a differential test checks the rest.
public enum JSONParser {
    /// Arrays and objects nested deeper than this are refused (as `JSONDecoder` does at 512).
    public static let maxDepth = 512

    /// Why a text is not JSON, and where.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// What is wrong.
        public var reason: String
        /// The byte offset at which it was found.
        public var offset: Int
        /// `<reason> at byte <offset>`.
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses one JSON value from `bytes`.
    /// - Throws: ``Failure`` for anything that is not a single valid JSON text.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        try whole(bytes) { (reader: inout Reader) throws(Failure) in try reader.value(depth: 0) }
    }

    /// `read` over `bytes` as one JSON text: whitespace around the value, nothing else after it.
    @inline(__always)
    static func whole<T>(_ bytes: [UInt8], _ read: (inout Reader) throws(Failure) -> T) throws(Failure) -> T {
        try bytes.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) throws(Failure) -> T in
            var reader = Reader(bytes: buffer)
            reader.skipWhitespace()
            let value = try read(&reader)
            reader.skipWhitespace()
            guard reader.at == buffer.count else { throw reader.fail("unexpected data after the value") }
            return value
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        func fail(_ reason: String) -> Failure { Failure(reason: reason, offset: at) }

        mutating func skipWhitespace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard at < bytes.count else { throw fail("unexpected end of data") }
            switch bytes[at] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard at + count <= bytes.count else { throw fail("unexpected end of data") }
            for i in 0..<count where bytes[at + i] != word.utf8Start[i] { throw fail("invalid literal") }
            at += count
        }

        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw fail("too deeply nested") }
            at += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard at < bytes.count else { throw fail("unexpected end of data") }
                guard bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let key = try string()
                skipWhitespace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                at += 1
                skipWhitespace()
                guard members.updateValue(try value(depth: depth), forKey: key) == nil else {
                    throw fail("duplicate member name")
                }
                skipWhitespace()
                guard at < bytes.count else { throw fail("unexpected end of data") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                guard bytes[at] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                at += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw fail("too deeply nested") }
            at += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(elements) }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth))
                skipWhitespace()
                guard at < bytes.count else { throw fail("unexpected end of data") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                guard bytes[at] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                at += 1
                return .array(elements)
            }
        }

        /// Reads a number. With `checkOnly`, a short number without an exponent (at most 15 characters: it can be
        /// neither infinite nor a zero from non-zero digits) is only checked against the grammar, and 0 returned.
        mutating func number(checkOnly: Bool = false) throws(Failure) -> Double {
            let start = at
            if bytes[at] == UInt8(ascii: "-") { at += 1 }
            func digits(_ reader: inout Reader) -> Int {
                let from = reader.at
                while reader.at < reader.bytes.count, reader.bytes[reader.at] >= 0x30, reader.bytes[reader.at] <= 0x39 { reader.at += 1 }
                return reader.at - from
            }
            guard at < bytes.count, bytes[at] >= 0x30, bytes[at] <= 0x39 else { throw fail("invalid number") }
            if bytes[at] == UInt8(ascii: "0") {
                at += 1
                if at < bytes.count, bytes[at] >= 0x30, bytes[at] <= 0x39 { throw fail("invalid number (leading zero)") }
            } else {
                _ = digits(&self)
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                guard digits(&self) > 0 else { throw fail("invalid number (no digit after '.')") }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard digits(&self) > 0 else { throw fail("invalid number (no digit in the exponent)") }
            } else if checkOnly, at - start <= 15 {
                return 0
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            // Out of range either way is refused, as `JSONDecoder` does: infinite, or zero from non-zero digits.
            // A zero with an exponent is refused too: `JSONDecoder` refuses some of those (`0.00e5`), and callers fall back.
            guard let number = Double(text), number.isFinite,
                  number != 0 || !text.utf8.contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") || ($0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9")) }) else {
                at = start
                throw fail("number \(text) is not representable")
            }
            return number
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard at + 4 <= bytes.count else { throw fail("unexpected end of data") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("invalid \\u escape")
                }
                value = value << 4 | digit
                at += 1
            }
            return value
        }

        mutating func string() throws(Failure) -> String {
            at += 1
            let start = at
            // The common case: no escape, so the bytes are the string.
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    let raw = UnsafeBufferPointer(rebasing: bytes[start..<at])
                    guard let text = String(validating: raw, as: UTF8.self) else { throw Failure(reason: "invalid UTF-8 in a string", offset: start) }
                    at += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                guard byte >= 0x20 else { throw fail("unescaped control character in a string") }
                at += 1
            }
            var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<at]))
            while true {
                guard at < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    guard let text = String(validating: out, as: UTF8.self) else { throw Failure(reason: "invalid UTF-8 in a string", offset: start) }
                    at += 1
                    return text
                }
                guard byte >= 0x20 else { throw fail("unescaped control character in a string") }
                guard byte == UInt8(ascii: "\\") else { out.append(byte); at += 1; continue }
                at += 1
                guard at < bytes.count else { throw fail("unterminated string") }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    out.append(contentsOf: Array(String(try unicodeEscape()).utf8))
                default:
                    throw fail("invalid escape")
                }
            }
        }

        /// The scalar of a `\u` escape, just after its `u` (a surrogate pair's second escape read too).
        mutating func unicodeEscape() throws(Failure) -> Unicode.Scalar {
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard at + 2 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired high surrogate")
                }
                at += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired high surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("unpaired low surrogate")
            }
            return Unicode.Scalar(scalar)!
        }
    }
}
