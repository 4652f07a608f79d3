/// What sends requests and opens server-sent event streams: ``TransportClient`` over the network, or a server kept in
/// memory, so a client's whole flows can be driven by a test without processes or sockets.
public protocol HTTPTransport: Sendable {
    /// Sends a request and returns the whole response. Any HTTP status is a response, not an error.
    /// - Throws: ``TransportError`` when no response arrived.
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse
    /// Opens a `text/event-stream`; returns once the response head has arrived.
    func eventStream(_ request: TransportRequest) async throws(TransportError) -> TransportClient.EventStream
}

extension TransportClient: HTTPTransport {}

extension TransportClient.EventStream {
    /// An event stream whose body is `chunks` as they are yielded (a server kept in memory). When the reader stops
    /// (leaves its loop, or drops the stream unread), `onCancel` runs, as a network transfer would be aborted.
    public init(status: Int, headers: [(name: String, value: String)] = [], chunks: AsyncThrowingStream<[UInt8], any Error>,
                onCancel: @escaping @Sendable () -> Void = {}) {
        self.init(status: status, headers: headers, items: EventItems(body: TransferStream(base: chunks, cancel: onCancel)))
    }
}
