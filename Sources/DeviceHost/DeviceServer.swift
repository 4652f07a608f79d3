import Foundation
import Hummingbird
import Logging
import NIOCore
import ServerSupport

/// `survey-cli devices serve`: the devices API as a process. Prints `READY {"service": "survey-devices", "url", "pid"}`
/// once it accepts connections; on SIGTERM/SIGINT (or when the parent is gone) it stops every device and exits.
package struct DeviceServer: Sendable {
    let fleet: DeviceFleet
    let logger: Logger

    package init(fleet: DeviceFleet, logger: Logger) {
        self.fleet = fleet
        self.logger = logger
    }

    /// Serves until stopped; the devices are stopped (their directories kept) before it returns.
    /// - Parameter token: the bearer token every `/__devices` request must carry (`--token`); required when `host` is
    ///   not loopback. The API sits behind the same guard as the servers' control planes (PROTOCOL.md §9): a foreign
    ///   `Host` or `Origin`, or a body that is not JSON, is refused.
    package func run(host: String = "127.0.0.1", port: Int, parentPID: Int32?, token: String? = nil) async throws {
        let options = LaunchOptions(serviceName: "survey-devices", host: host, port: port, parentPID: parentPID,
                                    connections: ConnectionLimits(seconds: 75, 10, maxPipelined: 32))
        let bound = BoundAddress()
        let router = DeviceRoutes(fleet: fleet).makeRouter(logger: logger, guard: ControlPlaneGuard(prefix: "/__devices", token: token, bound: bound))
        let channel = BufferedHTTPChannel(responder: router.buildResponder(),
                                          bodyCap: 1 << 20, serverName: options.serviceName, logger: logger, limits: options.connections)
        do {
            try await ServerLauncher.run(childChannel: channel, eventLoopThreads: 1, options: options, bound: bound, logger: logger)
        } catch {
            await fleet.shutdown()
            throw error
        }
        await fleet.shutdown()
    }
}
