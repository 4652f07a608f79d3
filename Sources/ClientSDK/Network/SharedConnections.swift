import Transport

/// Network connections that many clients in one process share (simulated devices in a load test or a device host):
/// one HTTP client, with its connection pool per host and its one driver thread, instead of one of each per client.
///
/// ```swift
/// let connections = SharedConnections()
/// let devices = try configurations.map { try SurveyClient(configuration: $0, connections: connections) }
/// ...
/// for device in devices { await device.close() }
/// connections.shutdown()
/// ```
/// A client made without one makes its own and shuts it down on ``SurveyClient/close()``; shared connections are the
/// caller's to shut down, after the last client using them is closed (requests still in flight then fail).
public final class SharedConnections: Sendable {
    let transport: TransportClient

    /// Starts the shared HTTP client.
    /// - Parameters:
    ///   - requestTimeout: how long one request may take (the push stream is not bounded by it).
    ///   - connectTimeout: how long a connection may take to open.
    public init(requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(5)) {
        transport = TransportClient(configuration: .init(defaultTimeout: requestTimeout, connectTimeout: connectTimeout))
    }

    /// Stops the shared HTTP client; requests in flight fail. Safe to call more than once.
    public func shutdown() { transport.shutdown() }
}
