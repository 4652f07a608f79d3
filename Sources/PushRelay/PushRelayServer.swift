import Hummingbird
import NIOCore
import NIOSSL
import Logging
import ServerSupport
import SurveyWire
import ServiceLifecycle

/// Settings of a relay process.
public struct RelayConfiguration: Sendable {
    /// How often an idle stream gets a `: keepalive` comment (PROTOCOL.md §4: at most 25 s).
    public var keepaliveInterval: Duration
    /// APNs' payload limit, applied to APNs bodies and FCM data.
    public var maxAPNsPayloadBytes: Int
    /// Largest request body read at all.
    public var maxProviderBodyBytes: Int
    /// Pushes per second one device may receive (a token bucket holding one second's worth); more answer 429
    /// (APNs `TooManyRequests`, FCM `QUOTA_EXCEEDED`). nil = no limit.
    public var deviceRate: Double?
    /// How long a rotated or uninstalled token keeps being accepted (200, never delivered) before sends answer 410:
    /// APNs learns of an uninstall late.
    public var unregisteredLag: Duration
    /// Messages a device has in flight (delivered, not acked) while a backlog drains: on (re)connect the backlog goes
    /// out oldest first in batches of this size, the next after acks (autopush's model).
    public var ackBatch: Int
    /// Bearer token required on `/__control` and `/metrics` when set (`--control-token`).
    public var controlToken: String?
    /// Connection timeouts and the pipelining cap.
    package var connections: ConnectionLimits
    /// `--node-id` (``RelayNode/range``): every token this relay issues carries it, so a mock server given several
    /// relays sends each push to the one that issued its token.
    public var nodeID: Int = 0
    /// `--provider-auth`: whether the provider APIs require credentials (PROTOCOL.md §8).
    public var providerAuth: ProviderAuthMode = .lenient
    /// `--tls-port`: the port of the provider API over TLS with HTTP/2 (APNs' transport); 0 = a free one, nil = none.
    public var tlsPort: Int? = 0
    /// `--tls-cert` and `--tls-key`: PEM files for that port (default: a certificate from a CA made at start).
    public var tlsFiles: TLSFiles?
    /// `--proxy-port`: the HTTPS proxy for the push providers' hosts (PROTOCOL.md §9); 0 = a free one, nil = none.
    /// Needs the CA made at start (not `--tls-cert`): it issues each host's certificate.
    public var proxyPort: Int? = 0
    /// The `--host` name the made certificate also names.
    public var tlsHost = "127.0.0.1"

    /// PEM files for the TLS port.
    public struct TLSFiles: Sendable {
        public var certificate: String
        public var key: String
        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    package init(keepaliveInterval: Duration = .seconds(25), maxAPNsPayloadBytes: Int = 4096, maxProviderBodyBytes: Int = 1 << 20,
                deviceRate: Double? = nil, unregisteredLag: Duration = .zero, ackBatch: Int = 10, controlToken: String? = nil,
                connections: ConnectionLimits = ConnectionLimits()) {
        self.controlToken = controlToken
        self.connections = connections
        self.keepaliveInterval = keepaliveInterval
        self.maxAPNsPayloadBytes = maxAPNsPayloadBytes
        self.maxProviderBodyBytes = maxProviderBodyBytes
        self.deviceRate = deviceRate
        self.unregisteredLag = unregisteredLag
        self.ackBatch = max(1, ackBatch)
    }

    /// APNs' limit for `apns-push-type: voip`.
    public static let maxVoIPPayloadBytes = 5120
}

/// `push-relay --provider-auth`: how the provider APIs treat credentials.
public enum ProviderAuthMode: String, Sendable, CaseIterable {
    /// A request without credentials is accepted; credentials that are present and wrong are refused, as in `strict`.
    case lenient
    /// As the real services: FCM needs a bearer token from `POST /token` (else 401 `UNAUTHENTICATED`); APNs a provider
    /// token signed by a key given to `PUT /__control/apns/keys/{kid}` (else 403 `MissingProviderToken`), and a topic.
    case strict
}

/// The simulated push relay: APNs/FCM provider APIs, the device link and the control API.
public struct PushRelayServer: Sendable {
    /// Reported by `--version` and `/__control/health`.
    public static let version = TrioVersion.current

    let hub: RelayHub
    let configuration: RelayConfiguration
    let metrics: ServerMetrics
    let bound = BoundAddress()
    /// The last requests answered (`GET /__control/requests`).
    let journal = RequestJournal()
    /// Service accounts and access tokens for FCM's OAuth2.
    let fcmAuth = FCMAuth()
    /// APNs signing keys, for provider tokens.
    let apnsAuth = APNsAuth()
    /// The TLS port's identity (nil with `--tls-port none`).
    let tls: RelayTLS?

    /// Routes answered on the connection itself, before the router: the event stream. (Health is too, on the plain
    /// port; the router answers it on the TLS port.)
    package static let connectionRoutes = [RouteTable.Route(method: "GET", path: "/v1/devices/{token}/stream")]

    /// The API reference served at `/__control/openapi.json` (docs/openapi/push-relay.json, compiled in).
    public static var openAPIDocument: [UInt8] { PackageResources.openapi_json }

    /// The token a path names (`/v1/devices/{token}...`, `/3/device/{token}`, `/__control/devices/{token}`).
    static func subject(_ path: String) -> (participant: String?, token: String?) {
        for prefix in ["/v1/devices/", "/3/device/", "/__control/devices/"] where path.hasPrefix(prefix) {
            let token = path.dropFirst(prefix.count).prefix { $0 != "/" }
            return (nil, token.isEmpty ? nil : String(token))
        }
        return (nil, nil)
    }

    /// A relay with its state in memory, or in the SQLite file at `storePath` (loaded now; throws when it cannot be opened).
    package init(configuration: RelayConfiguration = RelayConfiguration(), storePath: String? = nil) throws {
        self.configuration = configuration
        let metrics = ServerMetrics()
        self.metrics = metrics
        let store = try storePath.map { try RelayStore(path: $0) }
        if configuration.tlsPort == nil {
            tls = nil
        } else if let files = configuration.tlsFiles {
            tls = try RelayTLS.files(certificate: files.certificate, key: files.key)
        } else {
            tls = try RelayTLS.generated(host: configuration.tlsHost)
        }
        hub = try RelayHub(metrics: metrics, configuration: configuration, store: store)
    }

    /// The router with every route of the relay but the event stream (`GET /v1/devices/{token}/stream`), which
    /// `RelayConnection` serves on the connection itself. Not public: on its own it would be a relay without streams.
    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let routes = RouteTableBox()
        router.add(middleware: RequestJournalMiddleware(journal: journal, prefix: "/__control", subject: Self.subject))
        router.add(middleware: RequestMetricsMiddleware(metrics: metrics))
        router.add(middleware: APNsRefusalMiddleware())
        router.add(middleware: JSONErrorMiddleware(routes: routes, logger: Logger(label: "push-relay")))
        router.add(middleware: ControlPlaneGuard(prefix: "/__control", token: configuration.controlToken, bound: bound))
        ProviderRoutes(hub: hub, configuration: configuration, auth: apnsAuth).add(to: router)
        FCMRoutes(hub: hub, configuration: configuration, auth: fcmAuth).add(to: router)
        DeviceRoutes(hub: hub, configuration: configuration).add(to: router)
        ControlRoutes(hub: hub, fcmAuth: fcmAuth, apnsAuth: apnsAuth, bound: bound, caPEM: tls?.caPEM, journal: journal).add(to: router)
        ReferenceRoutes.add(to: router, prefix: "/__control", document: PackageResources.openapi_json, journal: journal)
        metrics.addRoute(to: router)
        routes.set(RouteTable(RouteTable(router).routes + Self.connectionRoutes))
        return router
    }

    /// Runs the relay until SIGTERM/SIGINT (or the parent exits), printing the READY line once bound.
    package func run(options: LaunchOptions, logger: Logger) async throws {
        let relay = RelayConnection(hub: hub, serverName: options.serviceName, controlToken: configuration.controlToken, bound: bound,
                                    journal: journal)
        let responder = makeRouter().buildResponder()
        let connections = BufferedHTTPChannel(
            responder: responder, bodyCap: max(configuration.maxProviderBodyBytes, 1 << 20) + 1,
            serverName: options.serviceName, logger: logger, limits: configuration.connections, intercept: relay.intercept,
            onEventLoop: true, h2c: true)
        // APNs' transport: TLS with HTTP/2 (ALPN h2, or its preface without ALPN) or HTTP/1.1, through the same front
        // door as the plain port: the same request handler, interceptors, router, guards, journal, deadlines and
        // limits (docs/DECISIONS.md, issue 49).
        var secondaries: [ServerLauncher.Secondary] = []
        if let tlsPort = configuration.tlsPort, let tls {
            var tlsConfiguration = tls.configuration
            tlsConfiguration.applicationProtocols = ["h2", "http/1.1"]
            let context = try NIOSSLContext(configuration: tlsConfiguration)
            let tlsConnections = BufferedHTTPChannel(
                responder: responder, bodyCap: max(configuration.maxProviderBodyBytes, 1 << 20) + 1,
                serverName: options.serviceName, logger: logger, limits: configuration.connections, intercept: relay.intercept,
                onEventLoop: true, tls: context)
            let serverName = options.serviceName
            let host = options.host
            secondaries.append(.init(.tls) { group, tlsBound in
                tlsConnections.server(
                    configuration: ServerLauncher.serverConfiguration(host: host, port: tlsPort, serverName: serverName),
                    onServerRunning: { channel in tlsBound.set("https://\(host):\(channel.localAddress?.port ?? tlsPort)") },
                    eventLoopGroup: group, logger: logger)
            })
            // Proxy mode: CONNECT to a push provider's host is answered here, TLS with a certificate for that name
            // from the relay's CA, then the same front door as the TLS port. Nothing is forwarded.
            if let proxyPort = configuration.proxyPort, tls.caPEM != nil {
                let contexts = try ProxyHosts.contexts(tls)
                let proxyConnections = BufferedHTTPChannel(
                    responder: responder, bodyCap: max(configuration.maxProviderBodyBytes, 1 << 20) + 1,
                    serverName: options.serviceName, logger: logger, limits: configuration.connections, intercept: relay.intercept,
                    onEventLoop: true, proxy: { host, port in ProxyHosts.allows(host: host, port: port) ? contexts[host] : nil })
                secondaries.append(.init(.proxy) { group, proxyBound in
                    proxyConnections.server(
                        configuration: ServerLauncher.serverConfiguration(host: host, port: proxyPort, serverName: serverName),
                        onServerRunning: { channel in proxyBound.set("http://\(host):\(channel.localAddress?.port ?? proxyPort)") },
                        eventLoopGroup: group, logger: logger)
                })
            }
        }
        // Twice as many event loops as cores: in a reconnect storm each loop has a burst of accepts and stream opens to
        // work through, and a request on a loop behind such a burst waits for all of it. With more loops than cores the
        // kernel shares the CPU between them, and each has a smaller part of the burst ahead of a request (measured on
        // 2 cores, 18,000 streams reconnecting: the slowest health answer 0.68–0.79 s with 4 loops, 1.2–1.8 s with 2).
        // The cores are those the relay may run on (one under `taskset -c 0`), not the machine's.
        try await ServerLauncher.run(
            childChannel: connections, eventLoopThreads: 2 * UsableCores.count(), options: options, bound: bound,
            services: [StreamCloser(hub: hub), KeepaliveService(hub: hub, interval: configuration.keepaliveInterval)], secondaries: secondaries,
            logger: logger)
    }
}

/// Writes a keepalive comment to every open stream each interval: one timer for the whole relay, however many
/// devices are connected. The streams are split into slices (up to 25, one every interval / slices), so 18,000 streams
/// get 720 comments a second instead of 18,000 at once, which delayed the deliveries around each tick by a few
/// hundred milliseconds.
struct KeepaliveService: Service {
    let hub: RelayHub
    let interval: Duration

    static func slices(for interval: Duration) -> Int {
        max(1, min(25, Int(interval / .milliseconds(100))))
    }

    func run() async throws {
        let slices = Self.slices(for: interval)
        try? await cancelWhenGracefulShutdown {
            var slice = 0
            while !Task.isCancelled {
                try await Task.sleep(for: interval / slices)
                await hub.keepalive(slice: slice, of: slices)
                slice = (slice + 1) % slices
            }
        }
    }
}

/// Ends open event streams when the process shuts down, so graceful shutdown does not wait on them.
struct StreamCloser: Service {
    let hub: RelayHub
    func run() async throws {
        try? await gracefulShutdown()
        await hub.closeAllStreams()
    }
}
