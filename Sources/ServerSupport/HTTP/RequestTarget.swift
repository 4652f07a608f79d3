/// The one spelling of a request's path that everything after the connection sees: the control-plane guards, the
/// relay's intercepts, the journal and the router.
///
/// Hummingbird's router skips empty segments, so `//__admin/info` and `/metrics/` reached `/__admin/info` and
/// `/metrics` while the guards, comparing text, saw other paths and let them through. Here a path is made canonical
/// once, on the connection, before anything reads it:
/// - runs of `/` become one `/`, and a trailing `/` goes (`/metrics/` is `/metrics`; `/` stays `/`);
/// - a dot segment (`.` or `..`), a `\` (some proxies read it as `/`), or a target that is not origin-form (`*`,
///   `http://…`) is refused: no route has one, and each is a way to make two layers read two paths.
/// Percent-encoding is left alone: neither the router nor the guards decode a path, so `%2F__admin` is one segment of
/// text to both (a 404), and a path parameter may carry any encoded character (`%5C` in a participant id). Letter case
/// is left alone too: the router is case-sensitive, so `/__ADMIN/info` is a 404, not a way past the guard.
public enum RequestTarget {
    /// Why a target was refused.
    public enum Refusal: Error, Equatable, Sendable {
        /// Not `/`-rooted (asterisk- or absolute-form).
        case notOriginForm
        /// A `.` or `..` segment.
        case dotSegment
        /// A `\` in the path.
        case backslash
    }

    /// The canonical request target (path and, unchanged, its `?query`), or why it is refused. Returns `uri` itself
    /// (no copy) when it is already canonical, which is every well-formed client's case.
    public static func canonical(_ uri: String) -> Result<String, Refusal> {
        let bytes = Array(uri.utf8)
        let queryStart = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.count
        let path = bytes[..<queryStart]
        guard path.first == UInt8(ascii: "/") else { return .failure(.notOriginForm) }
        var needsRewrite = false
        var previous: UInt8 = 0
        var index = path.startIndex
        while index < path.endIndex {
            let byte = path[index]
            if byte == UInt8(ascii: "\\") { return .failure(.backslash) }
            if byte == UInt8(ascii: "/"), previous == UInt8(ascii: "/") { needsRewrite = true }
            previous = byte
            index += 1
        }
        if path.count > 1, path.last == UInt8(ascii: "/") { needsRewrite = true }
        // Dot segments, by segment.
        for segment in path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if segment.elementsEqual([UInt8(ascii: ".")]) || segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                return .failure(.dotSegment)
            }
        }
        guard needsRewrite else { return .success(uri) }
        var rewritten: [UInt8] = []
        rewritten.reserveCapacity(bytes.count)
        for byte in path where !(byte == UInt8(ascii: "/") && rewritten.last == UInt8(ascii: "/")) { rewritten.append(byte) }
        if rewritten.count > 1, rewritten.last == UInt8(ascii: "/") { rewritten.removeLast() }
        rewritten.append(contentsOf: bytes[queryStart...])
        return .success(String(decoding: rewritten, as: UTF8.self))
    }

    /// The refusal as the servers answer it: 400 `invalid_path`, and the connection closes.
    public static func error(_ refusal: Refusal) -> APIError {
        let why: String
        switch refusal {
        case .notOriginForm: why = "the request target must be a path starting with '/'"
        case .dotSegment: why = "the path has a '.' or '..' segment"
        case .backslash: why = "the path has a backslash"
        }
        return APIError(.badRequest, code: "invalid_path", why)
    }
}
