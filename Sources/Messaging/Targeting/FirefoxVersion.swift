/// Firefox's version ordering (nsVersionComparator, ported to Rust in application-services' firefox-versioning), used by
/// the `versionCompare` transform.
///
/// A version is a dot-separated list of parts; each part is `<number a><string b><number c><extra d>`, compared in that
/// order. A missing part or number counts as 0; a part `*` is the largest number; `N+` means `(N+1)pre`; an empty string
/// sorts **above** a non-empty one, so `93 > 93pre` and `14.!` is below `14.0`.
public struct FirefoxVersion: Sendable, Equatable, Comparable {
    struct Part: Equatable {
        var a: Int64 = 0
        var b: String = ""
        var c: Int64 = 0
        var d: String = ""
    }

    var parts: [Part]

    public init(_ text: String) {
        parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Self.parse(Substring($0)) }
    }

    static func parse(_ text: Substring) -> Part {
        var part = Part()
        if text == "*" {
            part.a = Int64(Int32.max)
            return part
        }
        var rest = text[...]
        func number() -> Int64 {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            rest = rest.dropFirst(digits.count)
            return min(Int64(digits.prefix(10)) ?? 0, Int64(Int32.max))
        }
        part.a = number()
        if rest.first == "+" {
            part.a += 1
            part.b = "pre"
            return part
        }
        let b = rest.prefix { !($0.isASCII && $0.isNumber) && $0 != "+" && $0 != "-" }
        part.b = String(b)
        rest = rest.dropFirst(b.count)
        part.c = number()
        part.d = String(rest)
        return part
    }

    /// Empty strings sort after every non-empty one; otherwise byte order.
    static func compareStrings(_ x: String, _ y: String) -> Int {
        if x == y { return 0 }
        if x.isEmpty { return 1 }
        if y.isEmpty { return -1 }
        return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
    }

    static func compare(_ x: Part, _ y: Part) -> Int {
        if x.a != y.a { return x.a < y.a ? -1 : 1 }
        let b = compareStrings(x.b, y.b)
        if b != 0 { return b }
        if x.c != y.c { return x.c < y.c ? -1 : 1 }
        return compareStrings(x.d, y.d)
    }

    /// -1, 0 or 1.
    public static func compare(_ x: FirefoxVersion, _ y: FirefoxVersion) -> Int {
        for i in 0..<max(x.parts.count, y.parts.count) {
            let result = compare(i < x.parts.count ? x.parts[i] : Part(), i < y.parts.count ? y.parts[i] : Part())
            if result != 0 { return result }
        }
        return 0
    }

    public static func < (x: FirefoxVersion, y: FirefoxVersion) -> Bool { compare(x, y) < 0 }
    public static func == (x: FirefoxVersion, y: FirefoxVersion) -> Bool { compare(x, y) == 0 }
}
