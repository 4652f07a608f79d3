/// An `application/x-www-form-urlencoded` body, parsed the way Beiwe's server (Django) reads it.
///
/// Duplicate keys keep the last value (Android writes some keys twice). Values the client did not
/// percent-encode (Android builds bodies by hand) are kept as they are: only valid `%XX` escapes are
/// decoded and `+` becomes a space.
public struct FormBody: Sendable, Equatable {
    /// Fields in the order they were first seen, each with its last value.
    public private(set) var fields: [(name: String, value: String)]
    /// Where each name sits in `fields`: lookups and replacements are O(1), so parsing is linear in the body.
    private var positions: [String: Int]

    /// The most fields a parsed body may have (``init(parsingBytes:maxFields:)``). Beiwe's requests carry about 20.
    public static let defaultMaxFields = 1_000

    /// A body with more fields than allowed.
    public struct TooManyFields: Error, Sendable, Equatable {
        /// The limit that was passed.
        public var limit: Int
    }

    /// Forms are equal when they hold the same fields in the same order.
    public static func == (a: FormBody, b: FormBody) -> Bool {
        a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// An empty form.
    public init() {
        fields = []
        positions = [:]
    }

    /// A form from name/value pairs; a later duplicate replaces an earlier one.
    public init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs { self[name] = value }
    }

    /// Parses an urlencoded body (no field limit: for text the caller built).
    public init(parsing body: some StringProtocol) {
        self.init(parsingBytes: Array(body.utf8))
    }

    /// Parses an urlencoded body from its bytes (invalid UTF-8 becomes U+FFFD), in time linear in its length.
    public init(parsingBytes bytes: some Collection<UInt8>) {
        // Without a limit the parse cannot fail.
        self = (try? Self(parsingBytes: bytes, maxFields: .max)) ?? FormBody()
    }

    /// Parses an urlencoded body, throwing ``TooManyFields`` past `maxFields` non-empty fields (each `&`-separated item
    /// counts, duplicates included, so a body of 100,000 empty names is refused before it costs anything).
    public init(parsingBytes bytes: some Collection<UInt8>, maxFields: Int) throws(TooManyFields) {
        self.init()
        let bytes = Array(bytes)
        var start = 0
        var items = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "&") { end += 1 }
            if end > start {
                items += 1
                guard items <= maxFields else { throw TooManyFields(limit: maxFields) }
                var equals = start
                while equals < end, bytes[equals] != UInt8(ascii: "=") { equals += 1 }
                let name = Self.decode(bytes[start..<equals])
                let value = equals < end ? Self.decode(bytes[(equals + 1)..<end]) : ""
                self[name] = value
            }
            start = end + 1
        }
    }

    /// The value of a field, or nil when absent. Setting replaces (last wins).
    public subscript(name: String) -> String? {
        get { positions[name].map { fields[$0].value } }
        set {
            if let index = positions[name] {
                if let newValue {
                    fields[index].value = newValue
                } else {
                    fields.remove(at: index)
                    positions[name] = nil
                    for i in index..<fields.count { positions[fields[i].name] = i }
                }
            } else if let newValue {
                positions[name] = fields.count
                fields.append((name, newValue))
            }
        }
    }

    /// The urlencoded text of this form.
    public func encoded() -> String {
        fields.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    /// RFC 3986's unreserved characters: letters, digits, `-`, `.`, `_`, `~` (compared by range, not looked up: the
    /// set lookup per byte it replaces made encoding a field 3.2 times slower).
    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters (upper-case hex digits).
    public static func encode(_ text: String) -> String {
        let utf8 = text.utf8
        // Most fields (ids, hashes, tokens) need no escape: the text itself, without a copy.
        if utf8.allSatisfy(isUnreserved) { return text }
        return String(unsafeUninitializedCapacity: utf8.count * 3) { buffer in
            var count = 0
            for byte in utf8 {
                if isUnreserved(byte) {
                    buffer[count] = byte
                    count += 1
                } else {
                    buffer[count] = UInt8(ascii: "%")
                    buffer[count + 1] = hexDigit(byte >> 4)
                    buffer[count + 2] = hexDigit(byte & 15)
                    count += 3
                }
            }
            return count
        }
    }

    @inline(__always)
    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10 }

    /// Decodes `+` and valid `%XX` escapes; anything else is kept literally.
    public static func decode(_ text: some StringProtocol) -> String {
        decode(Array(text.utf8)[...])
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        if !bytes.contains(where: { $0 == 43 || $0 == 37 }) { return String(decoding: bytes, as: UTF8.self) }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        func hexValue(_ b: UInt8) -> UInt8? {
            switch b {
            case 48...57: b - 48
            case 65...70: b - 55
            case 97...102: b - 87
            default: nil
            }
        }
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == 43 {
                out.append(32); i += 1
            } else if b == 37, i + 2 < bytes.endIndex, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) {
                out.append(hi << 4 | lo); i += 3
            } else {
                out.append(b); i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
