/// Query-string values (`?wait=5s&after=12&limit=50`) decoded into ranged values, as the bodies are: one place where a
/// value is checked before any arithmetic sees it, so no query can trap a server (issue 49: `wait=1e308` and
/// `after=9223372036854775807` did). Pure; fuzzed over whole request targets (`FuzzTarget.target`).
public enum QueryValue {
    /// The longest value text read at all; longer is refused without being parsed.
    public static let maxTextLength = 64

    /// `250ms`, `5s`, `1.5s`, `1m`, or a bare number of seconds, when it lies in `range`; nil otherwise (not a
    /// duration, not finite, or out of range: never a trap).
    public static func duration(_ text: String, in range: ClosedRange<Duration>) -> Duration? {
        guard text.utf8.count <= maxTextLength else { return nil }
        var number = Substring(text)
        var scale = 1.0
        for (suffix, unit) in [("ms", 0.001), ("s", 1.0), ("m", 60.0)] where text.hasSuffix(suffix) {
            number = number.dropLast(suffix.count)
            scale = unit
            break
        }
        guard let value = Double(number), value.isFinite else { return nil }
        let milliseconds = (value * scale * 1000).rounded()
        let low = Double(range.lowerBound.components.seconds) * 1000, high = Double(range.upperBound.components.seconds) * 1000
            + Double(range.upperBound.components.attoseconds) / 1e15
        // Compared as a Double first: only a value in range is converted to an integer.
        guard milliseconds.isFinite, milliseconds >= low, milliseconds <= high else { return nil }
        return .milliseconds(Int64(milliseconds))
    }

    /// A decimal integer (an optional `-`, digits only) in `range`; nil otherwise. Never traps, whatever its length.
    public static func integer(_ text: String, in range: ClosedRange<Int>) -> Int? {
        guard text.utf8.count <= maxTextLength, let value = Int(text), range.contains(value) else { return nil }
        return value
    }

    /// The `name=value` pairs of a request target's query (after the first `?`), split on `&` (empty parts skipped),
    /// as the servers read them (Hummingbird's `URI.queryParameters`, whose reading this is, so that the fuzzer reaches
    /// what the routes see): a name as written; a value percent-decoded, or as written when an escape in it is invalid
    /// (`+` stays `+`); a part without `=` a name with an empty value.
    public static func pairs(ofTarget target: String) -> [(name: String, value: String)] {
        guard let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return [] }
        return pairs(query: Substring(target.utf8[target.utf8.index(after: question)...]))
    }

    /// The pairs of a query string (the part after `?`); see ``pairs(ofTarget:)``.
    public static func pairs(query: Substring) -> [(name: String, value: String)] {
        query.utf8.split(separator: UInt8(ascii: "&")).map { part in
            guard let equals = part.firstIndex(of: UInt8(ascii: "=")) else { return (String(decoding: part, as: UTF8.self), "") }
            let value = part[part.index(after: equals)...]
            return (String(decoding: part[..<equals], as: UTF8.self), decode(value) ?? String(decoding: value, as: UTF8.self))
        }
    }

    /// Percent-escapes decoded; nil when one is invalid (a `%` without two hex digits).
    static func decode(_ bytes: Substring.UTF8View.SubSequence) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                index = bytes.index(after: index)
                continue
            }
            guard bytes.distance(from: index, to: bytes.endIndex) >= 3, let high = hex(bytes[bytes.index(index, offsetBy: 1)]),
                  let low = hex(bytes[bytes.index(index, offsetBy: 2)]) else { return nil }
            out.append(high << 4 | low)
            index = bytes.index(index, offsetBy: 3)
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
