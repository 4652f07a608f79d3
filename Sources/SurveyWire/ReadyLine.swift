/// The one line a server prints to stdout when it accepts connections (PROTOCOL.md §6):
/// `READY {"service": "mock-server", "url": "http://127.0.0.1:PORT", "pid": N}`.
public struct ReadyLine: Codable, Sendable, Equatable {
    /// `mock-server`, `push-relay`, `survey-cli` or `survey-devices`.
    public var service: String
    /// The bound base URL, such as `http://127.0.0.1:PORT`.
    public var url: String
    /// The process id.
    public var pid: Int
    /// Extra URLs (used by `survey-cli up`, which reports both servers).
    public var mockServer: String?
    /// The relay's URL (`survey-cli up`).
    public var pushRelay: String?
    /// Every relay when `survey-cli up --relays K` started several (the first is `push_relay`).
    public var pushRelays: [String]?
    /// The relay's TLS port (`https://127.0.0.1:P`: APNs over HTTP/2), unless `--tls-port none`.
    public var tlsURL: String?
    /// The devices API (`survey-cli up`, PROTOCOL.md §8: `/__devices`).
    public var devices: String?
    /// The relay's HTTPS proxy for the push providers' hosts (`push-relay --proxy-port`, PROTOCOL.md §9).
    public var proxyURL: String?
    /// The relay's proxy as `survey-cli up` names it.
    public var pushRelayProxy: String?
    /// The bearer token every control plane takes, when `survey-cli up` generated it (bound beyond loopback without
    /// `--token` or `TRIO_TOKEN`, as the container image does): the only place it is told.
    public var token: String?

    enum CodingKeys: String, CodingKey {
        case service, url, pid, mockServer = "mock_server", pushRelay = "push_relay", pushRelays = "push_relays", tlsURL = "tls_url"
        case devices, proxyURL = "proxy_url", pushRelayProxy = "push_relay_proxy", token
    }

    /// Creates the value from its fields.
    public init(service: String, url: String, pid: Int, mockServer: String? = nil, pushRelay: String? = nil, pushRelays: [String]? = nil,
                tlsURL: String? = nil, devices: String? = nil) {
        self.devices = devices
        self.pushRelays = pushRelays
        self.tlsURL = tlsURL
        self.service = service
        self.url = url
        self.pid = pid
        self.mockServer = mockServer
        self.pushRelay = pushRelay
    }

    /// The full line, `READY ` followed by compact JSON.
    public func line() -> String {
        "READY " + ((try? WireJSON.encodeString(self)) ?? "{}")
    }

    /// Parses a `READY {...}` line; nil for any other line.
    public static func parse(_ line: some StringProtocol) -> ReadyLine? {
        guard line.hasPrefix("READY ") else { return nil }
        return try? WireJSON.decode(ReadyLine.self, from: String(line.dropFirst(6)))
    }
}
