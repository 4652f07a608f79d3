extension JSONParser {
    /// What a JSON text's top-level value is.
    public enum Kind: Sendable, Equatable {
        /// `{...}`
        case object
        /// `[...]`
        case array
        /// `"..."`
        case string
        /// A number.
        case number
        /// `true` or `false`.
        case bool
        /// `null`.
        case null
    }

    /// Checks that `bytes` are one valid JSON text and says what its value is, without building it: for a caller that
    /// only needs to know a body is, say, a JSON object (a load tool checking each answer), where ``parse(_:)`` would
    /// allocate every member. It accepts exactly what ``parse(_:)`` accepts, except duplicate member names, which it does
    /// not look for (`JSONDecoder` takes them too).
    /// - Throws: ``Failure`` for anything that is not a single valid JSON text.
    public static func kind(of bytes: [UInt8]) throws(Failure) -> Kind {
        try whole(bytes) { (reader: inout Reader) throws(Failure) in try reader.skipValue(depth: 0) }
    }
}

extension JSONParser.Reader {
    /// Reads past one value, checking it as ``value(depth:)`` does, and says what it was.
    mutating func skipValue(depth: Int) throws(JSONParser.Failure) -> JSONParser.Kind {
        guard at < bytes.count else { throw fail("unexpected end of data") }
        switch bytes[at] {
        case UInt8(ascii: "{"): try skipContainer(depth: depth + 1, close: UInt8(ascii: "}"), members: true); return .object
        case UInt8(ascii: "["): try skipContainer(depth: depth + 1, close: UInt8(ascii: "]"), members: false); return .array
        case UInt8(ascii: "\""): try skipString(); return .string
        case UInt8(ascii: "t"): try literal("true"); return .bool
        case UInt8(ascii: "f"): try literal("false"); return .bool
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try number(checkOnly: true); return .number
        default: throw fail("unexpected character")
        }
    }

    /// An object (`members`: each element is a name, `:`, a value) or an array, from its opening bracket.
    mutating func skipContainer(depth: Int, close: UInt8, members: Bool) throws(JSONParser.Failure) {
        guard depth <= JSONParser.maxDepth else { throw fail("too deeply nested") }
        at += 1
        skipWhitespace()
        if at < bytes.count, bytes[at] == close { at += 1; return }
        while true {
            skipWhitespace()
            if members {
                guard at < bytes.count else { throw fail("unexpected end of data") }
                guard bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                try skipString()
                skipWhitespace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                at += 1
                skipWhitespace()
            }
            _ = try skipValue(depth: depth)
            skipWhitespace()
            guard at < bytes.count else { throw fail("unexpected end of data") }
            if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
            guard bytes[at] == close else { throw fail(members ? "expected ',' or '}'" : "expected ',' or ']'") }
            at += 1
            return
        }
    }

    /// A string, from its opening quote: escapes checked as ``string()`` reads them, and the UTF-8 of its raw bytes
    /// checked only when one is not ASCII (escapes are ASCII, so the raw bytes are valid exactly when the text is).
    mutating func skipString() throws(JSONParser.Failure) {
        at += 1
        let start = at
        var ascii = true
        while at < bytes.count {
            skipPlainBytes(ascii: &ascii)
            guard at < bytes.count else { break }
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                if !ascii {
                    var parser = UTF8.ForwardParser()
                    var input = UnsafeBufferPointer(rebasing: bytes[start..<at]).makeIterator()
                    scan: while true {
                        switch parser.parseScalar(from: &input) {
                        case .valid: continue
                        case .emptyInput: break scan
                        case .error: throw JSONParser.Failure(reason: "invalid UTF-8 in a string", offset: start)
                        }
                    }
                }
                at += 1
                return
            }
            guard byte >= 0x20 else { throw fail("unescaped control character in a string") }
            if byte >= 0x80 { ascii = false }
            at += 1
            guard byte == UInt8(ascii: "\\") else { continue }
            guard at < bytes.count else { throw fail("unterminated string") }
            let escape = bytes[at]
            at += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                 UInt8(ascii: "r"), UInt8(ascii: "t"): break
            case UInt8(ascii: "u"): _ = try unicodeEscape()
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    /// Eight bytes at a time, past those that need no look inside a string: stops at (or up to seven bytes before) the
    /// first quote, backslash or control character. A byte ≥ 0x80 only marks the string as not ASCII.
    mutating func skipPlainBytes(ascii: inout Bool) {
        guard let base = bytes.baseAddress else { return }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while at + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + at).loadUnaligned(as: UInt64.self)
            // A lane of `(x - 1) & ~x & 0x80` is set where x's byte is zero (later lanes may be set falsely after a real
            // one, which only stops the fast walk early); `(word - 0x20) & ~word` likewise where a byte is below 0x20.
            func zeroLanes(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
            let special = zeroLanes(word ^ (ones &* 0x22)) | zeroLanes(word ^ (ones &* 0x5C)) | ((word &- ones &* 0x20) & ~word & highs)
            if special != 0 { return }
            if word & highs != 0 { ascii = false }
            at += 8
        }
    }
}
