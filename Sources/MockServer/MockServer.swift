import Foundation
import Hummingbird
import Logging
import NIOCore
import ServerSupport
import SurveyWire
import SurveyCrypto
import ServiceLifecycle
import Transport

/// The Beiwe-compatible mock study server: mobile API, telemetry, admin API and the push scheduler.
public struct MockServer: Sendable {
    /// Reported by `/__admin/info`.
    public static let version = TrioVersion.current

    let context: ServerContext
    let httpClient: TransportClient

    /// Opens (or creates, migrating) the store and prepares the server. Throws when the database cannot be opened.
    public init(configuration: MockServerConfiguration, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) async throws {
        let metrics = ServerMetrics()
        let store = try await StoreOpener.open(configuration.store, metrics: metrics, logger: logger)
        let client = TransportClient(configuration: .init(defaultTimeout: .seconds(10), connectTimeout: .seconds(2)))
        var credential: FCMCredential?
        if configuration.profile == .beiwe {
            var account: ServiceAccount?
            if let path = configuration.fcmServiceAccountFile {
                guard let bytes = FileManager.default.contents(atPath: path) else {
                    throw MockServerStartError(message: "--fcm-service-account: cannot read \(path)")
                }
                do { account = try ServiceAccount(json: [UInt8](bytes)) } catch {
                    throw MockServerStartError(message: "--fcm-service-account \(path): \(error)")
                }
            }
            credential = FCMCredential(client: client, project: configuration.fcmProject, serviceAccount: account)
        }
        let dispatcher = PushDispatcher(client: client, relayURLs: configuration.relayURLs, fcmProject: configuration.fcmProject,
                                        logger: logger, beiweCredential: credential)
        let scheduler = SchedulerEngine(store: store, dispatcher: dispatcher, realNow: now, logger: logger)
        httpClient = client
        let decoy = try BeiwePassword.makeRecord(deviceHash: Base64URL.encode(SecureRandom.bytes(32)), iterations: configuration.kdfIterations)
        context = ServerContext(configuration: configuration, store: store, scheduler: scheduler, realNow: now, bound: BoundAddress(),
                                metrics: metrics, logger: logger, loginThrottle: LoginThrottle(limit: configuration.maxFailedLogins),
                                decoyPasswordRecord: decoy,
                                telemetryBytes: TelemetryQuota(used: try await store.telemetryBytes(), limit: configuration.maxTelemetryBytes))
    }

    /// The router with every route.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let routes = RouteTableBox()
        router.add(middleware: RequestJournalMiddleware(journal: context.journal, prefix: "/__admin", subject: Self.subject, study: Self.study))
        router.add(middleware: RequestMetricsMiddleware(metrics: context.metrics))
        router.add(middleware: JSONErrorMiddleware(routes: routes, logger: context.logger))
        router.add(middleware: ControlPlaneGuard(prefix: "/__admin", token: context.configuration.adminToken, bound: context.bound))
        if context.configuration.profile == .beiwe { router.add(middleware: BeiweProfileMiddleware()) }
        router.add(middleware: FaultMiddleware(faults: context.faults))
        MobileRoutes(context: context).add(to: router)
        TelemetryRoutes(context: context).add(to: router)
        FeatureRoutes(context: context).add(to: router)
        AdminRoutes(context: context).add(to: router)
        ReferenceRoutes.add(to: router, prefix: "/__admin", document: PackageResources.openapi_json, journal: context.journal)
        context.metrics.addRoute(to: router)
        routes.set(RouteTable(router))
        return router
    }

    /// The study an admin path names (`/__admin/studies/{study_id}...`).
    static func study(_ path: String) -> String? {
        let prefix = "/__admin/studies/"
        guard path.hasPrefix(prefix) else { return nil }
        let id = path.dropFirst(prefix.count).prefix { $0 != "/" }
        return id.isEmpty ? nil : String(id)
    }

    /// The participant an admin path names (`/__admin/participants/{patient_id}...`); mobile routes name theirs once the
    /// form is read.
    static func subject(_ path: String) -> (participant: String?, token: String?) {
        let prefix = "/__admin/participants/"
        guard path.hasPrefix(prefix) else { return (nil, nil) }
        let id = path.dropFirst(prefix.count).prefix { $0 != "/" }
        return (id.isEmpty ? nil : String(id), nil)
    }

    /// The API reference served at `/__admin/openapi.json` (docs/openapi/mock-server.json, compiled in).
    public static var openAPIDocument: [UInt8] { PackageResources.openapi_json }

    /// Runs until SIGTERM/SIGINT (or the parent exits), printing the READY line once bound.
    package func run(options: LaunchOptions) async throws {
        defer { httpClient.shutdown() }
        do {
            let configuration = context.configuration
            let connections = BufferedHTTPChannel(
                responder: makeRouter().buildResponder(), bodyCap: max(configuration.maxBodyBytes, configuration.maxUploadBytes) + 1,
                serverName: options.serviceName, logger: context.logger, limits: options.connections)
            // One loop per core of the machine, not per core it may run on (``UsableCores``, which the relay and the load
            // tool use): pinned to one core, one loop made a health request cost 39–40 µs of server CPU against
            // 32–33 µs with two (`pinned.py --only health`, alternated), registrations the same.
            try await ServerLauncher.run(
                childChannel: connections, eventLoopThreads: System.coreCount, options: options, bound: context.bound,
                services: [SchedulerService(context: context)], logger: context.logger)
        } catch {
            await context.store.close()
            throw error
        }
        await context.store.close()
    }
}

/// Fires due occurrences of real-time studies every tick.
struct SchedulerService: Service {
    let context: ServerContext

    func run() async throws {
        // A failed tick (a database read, a quarantined row) is logged and tried again next tick; it never stops the
        // server. A quarantined study is logged once, not every second.
        do {
            try await cancelWhenGracefulShutdown {
                var quarantined: Set<String> = []
                while true {
                    try await Task.sleep(for: context.configuration.tickInterval)
                    let studies: [String]
                    do {
                        studies = try await context.store.realTimeStudies()
                    } catch {
                        context.logger.error("scheduler could not list studies; trying again next tick", metadata: ["error": "\(error)"])
                        continue
                    }
                    for id in studies {
                        do {
                            try await context.scheduler.tick(studyID: id, wait: false)
                            quarantined.remove(id)
                        } catch let error as APIError where error.code == "study_quarantined" {
                            if quarantined.insert(id).inserted {
                                context.logger.error("study quarantined: not scheduled until its row is fixed",
                                                     metadata: ["study_id": "\(id)", "error": "\(error)"])
                            }
                        } catch {
                            context.logger.error("scheduler tick failed", metadata: ["study_id": "\(id)", "error": "\(error)"])
                        }
                    }
                }
            }
        } catch is CancellationError {
            return
        }
    }
}

/// A setting the server cannot start with (an unreadable or invalid `--fcm-service-account` file).
public struct MockServerStartError: Error, CustomStringConvertible {
    /// What is wrong, naming the flag.
    public var message: String
    /// The message.
    public var description: String { message }
}
