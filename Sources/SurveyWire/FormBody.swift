/// An `application/x-www-form-urlencoded` body, parsed the way Beiwe's server (Django) reads it.
///
/// Duplicate keys keep the last value (Android writes some keys twice). Values the client did not
/// percent-encode (Android builds bodies by hand) are kept as they are: only valid `%XX` escapes are
/// decoded and `+` becomes a space.
public struct FormBody: Sendable, Equatable {
    /// Fields in the order they were first seen, each with its last value.
    public private(set) var fields: [(name: String, value: String)]

    public static func == (a: FormBody, b: FormBody) -> Bool {
        a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// An empty form.
    public init() { fields = [] }

    /// A form from name/value pairs; a later duplicate replaces an earlier one.
    public init(_ pairs: [(String, String)]) {
        fields = []
        for (name, value) in pairs { self[name] = value }
    }

    /// Parses an urlencoded body.
    public init(parsing body: some StringProtocol) {
        fields = []
        for part in body.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(kv[0])
            let value = kv.count > 1 ? Self.decode(kv[1]) : ""
            self[name] = value
        }
    }

    /// The value of a field, or nil when absent. Setting replaces (last wins).
    public subscript(name: String) -> String? {
        get { fields.last(where: { $0.name == name })?.value }
        set {
            if let index = fields.firstIndex(where: { $0.name == name }) {
                if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
            } else if let newValue {
                fields.append((name, newValue))
            }
        }
    }

    /// The urlencoded text of this form.
    public func encoded() -> String {
        fields.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    static let unreserved: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    public static func encode(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                out.append(byte)
            } else {
                out.append(37); out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `+` and valid `%XX` escapes; anything else is kept literally.
    public static func decode(_ text: some StringProtocol) -> String {
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var i = 0
        func hexValue(_ b: UInt8) -> UInt8? {
            switch b {
            case 48...57: b - 48
            case 65...70: b - 55
            case 97...102: b - 87
            default: nil
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == 43 {
                out.append(32); i += 1
            } else if b == 37, i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) {
                out.append(hi << 4 | lo); i += 3
            } else {
                out.append(b); i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
