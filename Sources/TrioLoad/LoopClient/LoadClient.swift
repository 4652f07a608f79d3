import NIOCore
import ServerSupport
import Transport

/// Which HTTP client a load run's iterations use.
public enum LoadClient: String, Sendable, CaseIterable {
    /// NIO event loops, one per core the process may run on, each with its own keep-alive connections; the iterations
    /// run on the loops, as wrk's do (plain `http://` targets; `https://` ones go through libcurl).
    case nio
    /// libcurl (`Transport`'s client) on its own thread, as the SDK uses it.
    case curl

    /// The loop client for a run, when this is `nio`; `fallback` serves what it does not (https).
    func make(maxConnectionsPerHost: Int, timeout: Duration?, fallback: TransportClient) -> LoopHTTPClient? {
        guard self == .nio else { return nil }
        return LoopHTTPClient(threads: UsableCores.count(), maxConnectionsPerHost: maxConnectionsPerHost, defaultTimeout: timeout ?? .seconds(30),
                              connectTimeout: .seconds(5), fallback: fallback)
    }
}
