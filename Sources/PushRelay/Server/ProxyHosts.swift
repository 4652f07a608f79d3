import NIOSSL

/// The hosts the relay's proxy answers for (PROTOCOL.md §9, "Proxy mode"): FCM, Google's OAuth2 and Instance ID, and
/// APNs' production, sandbox and development hosts, on 443 (and APNs' 2197). Any other host or port is refused; the
/// relay never opens a connection out.
enum ProxyHosts {
    static let google = ["fcm.googleapis.com", "oauth2.googleapis.com", "iid.googleapis.com"]
    static let apple = ["api.push.apple.com", "api.sandbox.push.apple.com", "api.development.push.apple.com"]
    static var all: [String] { google + apple }

    /// Whether `CONNECT host:port` is tunnelled.
    static func allows(host: String, port: Int) -> Bool {
        if google.contains(host) { return port == 443 }
        if apple.contains(host) { return port == 443 || port == 2197 }
        return false
    }

    /// A TLS context for each host, its certificate issued by the relay's CA (made once, at start).
    static func contexts(_ tls: RelayTLS) throws -> [String: NIOSSLContext] {
        var contexts: [String: NIOSSLContext] = [:]
        for host in all {
            guard let configuration = try tls.configuration(forHost: host) else { continue }
            contexts[host] = try NIOSSLContext(configuration: configuration)
        }
        return contexts
    }
}
