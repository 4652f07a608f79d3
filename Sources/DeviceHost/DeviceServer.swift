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
    package func run(host: String = "127.0.0.1", port: Int, parentPID: Int32?) async throws {
        let options = LaunchOptions(serviceName: "survey-devices", host: host, port: port, parentPID: parentPID,
                                    connections: ConnectionLimits(seconds: 75, 10, maxPipelined: 32))
        let channel = BufferedHTTPChannel(responder: DeviceRoutes(fleet: fleet).makeRouter(logger: logger).buildResponder(),
                                          bodyCap: 1 << 20, serverName: options.serviceName, logger: logger, limits: options.connections)
        do {
            try await ServerLauncher.run(childChannel: channel, eventLoopThreads: 1, options: options, bound: BoundAddress(), logger: logger)
        } catch {
            await fleet.shutdown()
            throw error
        }
        await fleet.shutdown()
    }
}
