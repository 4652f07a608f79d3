/// The one spelling of a request's path that everything after the connection sees: the control-plane guards, the
/// relay's intercepts, the journal and the router (the servers' `RequestTarget` answers its refusals). Pure, and
/// fuzzed over whole request targets with their queries (`FuzzTarget.target`).
///
/// Hummingbird's router skips empty segments, so `//__admin/info` and `/metrics/` reached `/__admin/info` and
/// `/metrics` while the guards, comparing text, saw other paths and let them through. Here a path is made canonical
/// once, on the connection, before anything reads it:
/// - runs of `/` become one `/`, and a trailing `/` goes (`/metrics/` is `/metrics`; `/` stays `/`);
/// - a dot segment (`.` or `..`), a `\` (some proxies read it as `/`), or a target that is not origin-form (`*`,
///   `http://…`) is refused: no route has one, and each is a way to make two layers read two paths.
/// - a byte outside visible ASCII (a control, a space, DEL, or any byte from 0x80) anywhere in the target is refused,
///   as the HTTP/1.1 parser refuses it: HTTP/2 carries `:path` as raw bytes, and a `?` followed by a combining mark is
///   one `Character` to Swift, so text comparisons would read such a path differently from the router.
/// Percent-encoding is left alone: neither the router nor the guards decode a path, so `%2F__admin` is one segment of
/// text to both (a 404), and a path parameter may carry any encoded character (`%5C` in a participant id). Letter case
/// is left alone too: the router is case-sensitive, so `/__ADMIN/info` is a 404, not a way past the guard.
public enum RequestPath {
    /// Why a target was refused.
    public enum Refusal: Error, Equatable, Sendable {
        /// Not `/`-rooted (asterisk- or absolute-form).
        case notOriginForm
        /// A `.` or `..` segment.
        case dotSegment
        /// A `\` in the path.
        case backslash
        /// A byte outside visible ASCII (`!`…`~`) in the path or the query.
        case invalidByte
    }

    /// The canonical request target (path and, unchanged, its `?query`), or why it is refused. One pass over the
    /// bytes with no allocation when `uri` is already canonical (every well-formed client's case): `uri` itself comes
    /// back. Only a path that needs rewriting is copied.
    public static func canonical(_ uri: String) -> Result<String, Refusal> {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: "."), question = UInt8(ascii: "?"), backslash = UInt8(ascii: "\\")
        let utf8 = uri.utf8
        guard utf8.first == slash else { return .failure(.notOriginForm) }
        var needsRewrite = false
        var previous: UInt8 = 0
        /// Bytes of the current segment so far, and how many of them are dots (a segment of only 1 or 2 dots is refused).
        var segmentLength = 0, segmentDots = 0
        var pathEnd = utf8.endIndex
        for index in utf8.indices {
            let byte = utf8[index]
            guard byte > 0x20, byte < 0x7F else { return .failure(.invalidByte) }
            if byte == question {
                pathEnd = index
                break
            }
            if byte == backslash { return .failure(.backslash) }
            if byte == slash {
                if segmentLength > 0, segmentDots == segmentLength, segmentLength <= 2 { return .failure(.dotSegment) }
                if previous == slash { needsRewrite = true }
                segmentLength = 0
                segmentDots = 0
            } else {
                segmentLength += 1
                if byte == dot { segmentDots += 1 }
            }
            previous = byte
        }
        if segmentLength > 0, segmentDots == segmentLength, segmentLength <= 2 { return .failure(.dotSegment) }
        if pathEnd < utf8.endIndex, utf8[pathEnd...].contains(where: { $0 <= 0x20 || $0 >= 0x7F }) { return .failure(.invalidByte) }
        let path = utf8[..<pathEnd]
        if path.count > 1, previous == slash { needsRewrite = true }
        guard needsRewrite else { return .success(uri) }
        var rewritten: [UInt8] = []
        rewritten.reserveCapacity(utf8.count)
        for byte in path where !(byte == slash && rewritten.last == slash) { rewritten.append(byte) }
        if rewritten.count > 1, rewritten.last == slash { rewritten.removeLast() }
        rewritten.append(contentsOf: utf8[pathEnd...])
        return .success(String(decoding: rewritten, as: UTF8.self))
    }

    /// The path of a request target: what comes before its first `?` byte (the whole target when it has none). Split
    /// on bytes, never on `Character`s: a `?` followed by a combining mark (`?\u{0353}`) is one `Character`, so a
    /// `String.split(separator: "?")` would carry the query into the path (the fuzzer found it, issue 49).
    public static func path(of target: String) -> Substring {
        let utf8 = target.utf8
        guard let question = utf8.firstIndex(of: UInt8(ascii: "?")) else { return Substring(target) }
        return Substring(utf8[..<question])
    }
}
