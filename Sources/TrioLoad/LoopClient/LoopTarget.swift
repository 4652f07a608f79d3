/// Where a plain-HTTP request goes: `http://HOST[:PORT]/PATH?QUERY` split into the connection's key and the request
/// target. Anything else (https, user info, no host) is not the loop client's and goes to its fallback.
struct LoopTarget: Hashable, Sendable {
    var host: String
    var port: Int

    /// The `Host` header's value (a connection makes it once: ``LoopExchangeHandler``).
    var hostHeader: String {
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == 80 ? name : "\(name):\(port)"
    }

    /// The target and the request target (`/path?query`) of a plain-HTTP URL, or nil. Read byte by byte (it runs
    /// once per request: by characters it was 5 % of the load tool's CPU).
    static func parse(_ url: String) -> (target: LoopTarget, path: String)? {
        let bytes = url.utf8
        guard bytes.starts(with: "http://".utf8) else { return nil }
        let start = bytes.index(bytes.startIndex, offsetBy: 7)
        var end = start
        while end != bytes.endIndex, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[end]) { end = bytes.index(after: end) }
        let authority = bytes[start..<end]
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
        var pathBytes = bytes[end...]
        if let fragment = pathBytes.firstIndex(of: UInt8(ascii: "#")) { pathBytes = pathBytes[..<fragment] }
        let path = pathBytes.isEmpty ? "/" : pathBytes.first == UInt8(ascii: "?") ? "/" + String(Substring(pathBytes)) : String(Substring(pathBytes))
        var host = authority
        var portBytes: Substring.UTF8View?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portBytes = Substring(after.dropFirst()).utf8
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            host = authority[..<colon]
            portBytes = Substring(authority[authority.index(after: colon)...]).utf8
        }
        var port = 80
        if let portBytes {
            guard !portBytes.isEmpty, portBytes.count <= 5, portBytes.allSatisfy({ (48...57).contains($0) }) else { return nil }
            port = portBytes.reduce(0) { $0 * 10 + Int($1 - 48) }
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        return (LoopTarget(host: String(Substring(host)), port: port), path)
    }
}
