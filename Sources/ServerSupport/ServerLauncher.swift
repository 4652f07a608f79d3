import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOPosix
import Logging
import ServiceLifecycle
import Synchronization
import Dispatch
import SurveyWire

/// How a server process is bound and supervised (PROTOCOL.md §6).
package struct LaunchOptions: Sendable {
    /// Service name in the READY line (`mock-server`, `push-relay`).
    package var serviceName: String
    package var host: String
    /// 0 picks a free port; the READY line reports it.
    package var port: Int
    /// Stop when this process is gone.
    package var parentPID: Int32?
    /// Connection timeouts and the pipelining cap.
    package var connections: ConnectionLimits

    package init(serviceName: String, host: String = "127.0.0.1", port: Int = 0, parentPID: Int32? = nil,
                connections: ConnectionLimits = ConnectionLimits()) {
        self.connections = connections
        self.serviceName = serviceName
        self.host = host
        self.port = port
        self.parentPID = parentPID
    }
}

/// The URL a server is bound to, known once it accepts connections.
package final class BoundAddress: Sendable {
    private let value = ObservedValue<String?>(nil)
    package init() {}
    /// `http://host:port`, or nil before the server is running.
    package var url: String? { value.value }
    package func set(_ url: String) { value.update { $0 = url } }
    /// The URL once the server runs; nil if the waiting task is cancelled first (the server did not start).
    package func bound() async -> String? {
        await value.wait { $0 != nil } ?? nil
    }
}

/// Runs a server as a process: binds, prints the READY line to stdout once it accepts connections, and stops
/// gracefully on SIGTERM/SIGINT or when the parent process is gone.
package enum ServerLauncher {
    /// Runs a server whose connections are served by `childChannel`'s pipeline (both servers use a
    /// ``BufferedHTTPChannel`` around their router), on `eventLoopThreads` NIO threads.
    /// A further listener of a process: built on the process's event loops, named in its READY line.
    package struct Secondary: Sendable {
        /// Which READY line field carries its URL.
        package enum Field: Sendable { case tls, proxy }
        package var field: Field
        package var make: @Sendable (any EventLoopGroup, BoundAddress) throws -> any Service
        package init(_ field: Field, _ make: @escaping @Sendable (any EventLoopGroup, BoundAddress) throws -> any Service) {
            self.field = field
            self.make = make
        }
    }

    /// - Parameter secondaries: further servers on other ports (the relay's TLS port and its proxy), built on the same
    ///   event loops; the READY line waits until each runs and carries its URL (`tls_url`, `proxy_url`).
    package static func run(
        childChannel: some ServerChildChannel, eventLoopThreads: Int, options: LaunchOptions, bound: BoundAddress,
        services: [any Service] = [], secondaries: [Secondary] = [],
        logger: Logger
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, eventLoopThreads))
        let others = try secondaries.map { secondary -> (Secondary.Field, BoundAddress, any Service) in
            let address = BoundAddress()
            return (secondary.field, address, try secondary.make(group, address))
        }
        let server = childChannel.server(
            configuration: serverConfiguration(options),
            onServerRunning: { channel in
                // The READY line names every port, so it waits for the other servers to run. If one fails to start,
                // the group ends and cancels this wait: no READY line.
                var urls: [Secondary.Field: String] = [:]
                for (field, address, _) in others {
                    guard let url = await address.bound() else { return }
                    urls[field] = url
                }
                announce(channel, options: options, bound: bound, tls: urls[.tls], proxy: urls[.proxy])
            },
            eventLoopGroup: group, logger: logger)
        try await supervise(server: server, options: options, services: others.map(\.2) + services, logger: logger)
    }

    /// The server configuration for a port of this process (the same deep backlog and connection cap).
    package static func serverConfiguration(host: String, port: Int, serverName: String) -> ServerConfiguration {
        ServerConfiguration(address: .hostname(host, port: port), serverName: serverName, backlog: 4096,
                            availableConnectionsDelegate: MaximumAvailableConnections(FileLimit.connectionCap()))
    }

    private static func serverConfiguration(_ options: LaunchOptions) -> ServerConfiguration {
        // A deep accept queue: a reconnect storm (thousands of devices at once) must not overflow it, or dropped SYNs come
        // back only after TCP's retransmission backoff (1 s, 3 s, 7 s, ...). The kernel caps it at net.core.somaxconn.
        // At most as many connections as the open-file limit allows, with room to spare: past it accept() fails, and
        // libdispatch's worker monitor, which opens /proc files, crashes the process (found at 18,000 relay streams).
        // Beyond the cap, new connections wait in the accept queue.
        ServerConfiguration(address: .hostname(options.host, port: options.port), serverName: options.serviceName, backlog: 4096,
                            availableConnectionsDelegate: MaximumAvailableConnections(FileLimit.connectionCap()))
    }

    /// Prints the READY line once the server accepts connections.
    private static func announce(_ channel: any Channel, options: LaunchOptions, bound: BoundAddress, tls: String? = nil, proxy: String? = nil) {
        let port = channel.localAddress?.port ?? options.port
        let url = "http://\(options.host):\(port)"
        bound.set(url)
        var ready = ReadyLine(service: options.serviceName, url: url, pid: Int(getpid()), tlsURL: tls)
        ready.proxyURL = proxy
        let line = ready.line()
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private static func supervise(server: any Service, options: LaunchOptions, services: [any Service], logger: Logger) async throws {
        var configs: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server)]
        // Services listed after the server are shut down before it, so they can end long-lived responses.
        configs += services.map { .init(service: $0) }
        if let parent = options.parentPID {
            configs.append(.init(service: ParentWatcher(pid: parent), successTerminationBehavior: .gracefullyShutdownGroup))
        }
        let deadline = ShutdownDeadline(after: .milliseconds(950), logger: logger)
        defer { withExtendedLifetime(deadline) {} }
        var groupConfig = ServiceGroupConfiguration(services: configs, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // PROTOCOL.md §6: stop within 1 s of SIGTERM, whatever a connection is doing.
        groupConfig.maximumGracefulShutdownDuration = .milliseconds(800)
        try await ServiceGroup(configuration: groupConfig).run()
        // The server has stopped accepting and told every connection to finish: each closes once it has written the
        // answers it owed (a request still arriving gets half a second). Hummingbird's server returns before that (a
        // connection here is not a task it waits for), so the wait is here; one still open at the end is cut off.
        if await HTTPConnection.open.wait(until: { $0 == 0 }, timeout: .milliseconds(800)) == nil {
            ShutdownDeadline.forced(logger: logger, "\(HTTPConnection.open.value) connection(s) still open when the stop's time ran out")
        }
    }
}

/// PROTOCOL.md §6 promises an exit within 1 s of SIGTERM/SIGINT. A graceful stop answers what each connection owes,
/// then closes it, normally in a few milliseconds; if something holds it up (an answer that never comes), this ends
/// the process at the deadline, with ``forcedExitStatus`` so the stop does not pass for a clean one. Every write the
/// servers acknowledged is already committed, so nothing acknowledged is lost; the answers not yet written are.
final class ShutdownDeadline {
    /// The exit status of a stop that had to be forced (docs/cli.md, "Exit codes").
    static let forcedExitStatus: Int32 = 3

    /// Kept alive by the owner for as long as the server runs.
    private var sources: [any DispatchSourceSignal] = []

    init(after deadline: Duration, logger: Logger) {
        let milliseconds = Int(deadline.components.seconds * 1000 + deadline.components.attoseconds / 1_000_000_000_000_000)
        for sig in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
                    let open = HTTPConnection.open.value
                    ShutdownDeadline.forced(logger: logger, "the graceful stop did not finish in \(milliseconds) ms (\(open) connection(s) open)")
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Logs why the stop was forced and exits with ``forcedExitStatus``.
    static func forced(logger: Logger, _ reason: String) -> Never {
        logger.error("stop forced: \(reason)")
        exit(forcedExitStatus)
    }
}

/// Returns (ending the group gracefully) when the watched process no longer exists.
struct ParentWatcher: Service {
    let pid: Int32
    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    if kill(pid, 0) != 0 && errno == ESRCH { return }
                    try await Task.sleep(for: .milliseconds(250))
                }
            }
        } catch is CancellationError {
            return
        }
    }
}

/// The process's open-file limit, and how many connections a server may hold under it.
package enum FileLimit {
    /// Files kept free for everything but connections (SQLite, logs, /proc reads by libdispatch, outgoing HTTP).
    static let reserve = 512

    /// Raises the soft open-file limit to the hard one, then returns the connection cap: the limit less the reserve.
    package static func connectionCap() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 - reserve }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return max(64, Int(min(limit.rlim_cur, 1 << 30)) - reserve)
    }
}
