import Transport

/// The request awaiting its answer in ``LoopHTTPClient/send(_:)``: the connection resumes it once, with the response or
/// with the reason there is none. Every path that drops a request (connect failure, closed connection, timeout, a
/// resend handing it to another connection) ends in exactly one of these calls.
struct LoopReply: Sendable {
    private let continuation: UnsafeContinuation<TransportResponse, any Error>

    init(_ continuation: UnsafeContinuation<TransportResponse, any Error>) { self.continuation = continuation }

    func succeed(_ response: TransportResponse) { continuation.resume(returning: response) }

    func fail(_ error: TransportError) { continuation.resume(throwing: error) }
}
