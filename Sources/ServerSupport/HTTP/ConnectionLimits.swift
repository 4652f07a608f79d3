import NIOCore

/// Connection timeouts and the pipelining cap, the same on both servers (defaults in docs/DECISIONS.md, "Limits").
package struct ConnectionLimits: Sendable, Equatable {
    /// A connection with no request under way (just connected, or kept alive after a response) is closed after this.
    package var idleTimeout: TimeAmount
    /// A request must be read whole, headers and body, within this long of its first byte: else 408 and close.
    /// (A client that trickles its headers a byte at a time holds a connection this long at most.)
    package var requestTimeout: TimeAmount
    /// Requests read but not yet answered on one connection; a client pipelining more without reading is disconnected.
    package var maxPipelined: Int

    package init(idleTimeout: TimeAmount = .seconds(60), requestTimeout: TimeAmount = .seconds(10), maxPipelined: Int = 32) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maxPipelined = maxPipelined
    }

    /// From command-line values in seconds (checked by ``validate(idleTimeout:requestTimeout:maxPipelined:)``).
    package init(seconds idle: Double, _ request: Double, maxPipelined: Int) {
        self.init(idleTimeout: .milliseconds(Int64(idle * 1000)), requestTimeout: .milliseconds(Int64(request * 1000)), maxPipelined: maxPipelined)
    }

    /// The ranges the servers' `--idle-timeout`, `--request-timeout` and `--max-pipelined` accept.
    package static func validate(idleTimeout: Double, requestTimeout: Double, maxPipelined: Int) throws(LimitError) {
        guard idleTimeout >= 0.1, idleTimeout <= 86_400 else { throw LimitError("--idle-timeout must be 0.1-86400 seconds") }
        guard requestTimeout >= 0.1, requestTimeout <= 3_600 else { throw LimitError("--request-timeout must be 0.1-3600 seconds") }
        guard (1...1_000).contains(maxPipelined) else { throw LimitError("--max-pipelined must be 1-1000") }
    }

    /// A command-line value out of range.
    package struct LimitError: Error, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }
}
