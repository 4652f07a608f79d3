import Foundation
import Logging
import Synchronization

/// An async HTTP/1.1 client over libcurl's multi interface.
///
/// One driver thread runs every transfer of the client; connections to the same host are reused.
/// Cancelling the calling task aborts the transfer. Call ``shutdown()`` when done (it is also done on deinit).
public final class TransportClient: Sendable {
    /// Client-wide settings.
    public struct Configuration: Sendable {
        /// Total time allowed for a request that sets no timeout; nil for none.
        public var defaultTimeout: Duration?
        /// Time allowed to connect.
        public var connectTimeout: Duration
        /// Connections open at once per host, and idle connections kept for reuse (0 = libcurl's defaults: no bound,
        /// and four idle connections kept per transfer in progress). Requests past the bound wait for a connection.
        public var maxConnectionsPerHost: Int

        public init(defaultTimeout: Duration? = .seconds(30), connectTimeout: Duration = .seconds(5), maxConnectionsPerHost: Int = 0) {
            self.defaultTimeout = defaultTimeout
            self.connectTimeout = connectTimeout
            self.maxConnectionsPerHost = maxConnectionsPerHost
        }
    }

    private let driver: CurlDriver
    private let isShutDown = Mutex(false)

    /// Starts a client and its driver thread.
    public init(configuration: Configuration = Configuration()) {
        driver = CurlDriver(defaultTimeout: configuration.defaultTimeout, connectTimeout: configuration.connectTimeout,
                            maxConnectionsPerHost: configuration.maxConnectionsPerHost)
    }

    deinit { shutdown() }

    /// Stops the driver thread; requests in flight fail with `shut_down`. Safe to call more than once.
    public func shutdown() {
        let first = isShutDown.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { driver.shutdown() }
    }

    /// Sends a request and returns the whole response. Any HTTP status is a response, not an error.
    /// - Throws: ``TransportError`` when no response arrived (connection refused, timeout, cancellation).
    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let id = driver.makeID()
        let driver = self.driver
        let result: Result<TransportResponse, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<TransportResponse, TransportError>, Never>) in
                let transfer = CurlTransfer(id: id, request: request, sink: .buffered({ continuation.resume(returning: $0) }))
                driver.submit(transfer)
            }
        } onCancel: {
            driver.cancel(id)
        }
        return try result.get()
    }

    /// A response whose body arrives as it is received.
    public struct StreamingResponse: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        /// Body chunks; the sequence ends when the transfer ends and throws ``TransportError`` if it failed.
        /// Stopping iteration (breaking out of the loop, or dropping the sequence) aborts the transfer.
        public var body: TransferStream

        public func header(_ name: String) -> String? {
            let lower = name.lowercased()
            return headers.last { $0.name.lowercased() == lower }?.value
        }
    }

    /// Starts a request and returns once the response head has arrived; the body streams after.
    public func stream(_ request: TransportRequest) async throws(TransportError) -> StreamingResponse {
        let id = driver.makeID()
        let driver = self.driver
        let (body, bodyContinuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        bodyContinuation.onTermination = { reason in
            if case .cancelled = reason { driver.cancel(id) }
        }
        let head: Result<(Int, [(name: String, value: String)]), TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let transfer = CurlTransfer(
                    id: id, request: request,
                    sink: .streaming(
                        head: { continuation.resume(returning: $0) },
                        chunk: { bodyContinuation.yield($0) },
                        end: { error in
                            if let error { bodyContinuation.finish(throwing: error) } else { bodyContinuation.finish() }
                        }))
                driver.submit(transfer)
            }
        } onCancel: {
            driver.cancel(id)
        }
        let (status, headers) = try head.get()
        return StreamingResponse(status: status, headers: headers, body: TransferStream(base: body, cancel: { driver.cancel(id) }))
    }

    /// A server-sent event stream: the response status and the items as they arrive.
    public struct EventStream: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        /// Parsed items; breaking out of the loop aborts the transfer.
        public var items: EventItems
    }

    /// Opens a `text/event-stream` and parses it. The request gets `Accept: text/event-stream` and no timeout
    /// unless it sets one.
    public func eventStream(_ request: TransportRequest) async throws(TransportError) -> EventStream {
        var request = request
        if !request.headers.contains(where: { $0.name.lowercased() == "accept" }) {
            request.headers.append(("Accept", "text/event-stream"))
        }
        if request.timeout == nil { request.timeout = .seconds(365 * 86400) }
        let response = try await stream(request)
        return EventStream(status: response.status, headers: response.headers, items: EventItems(body: response.body))
    }
}

/// Body chunks of a streaming transfer. Single consumer: when its iterator is released (the loop ended or was left
/// early) the transfer is aborted, and so it is when the stream is released without ever being iterated (a response
/// dropped unread), so a caller never leaves a connection running by accident.
public struct TransferStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let base: AsyncThrowingStream<[UInt8], any Error>
    let cancel: @Sendable () -> Void
    /// Aborts the transfer when the last copy of an un-iterated stream goes.
    let unread: UnreadGuard

    init(base: AsyncThrowingStream<[UInt8], any Error>, cancel: @escaping @Sendable () -> Void) {
        self.base = base
        self.cancel = cancel
        unread = UnreadGuard(cancel)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
        let guardToken: CancelOnRelease
        public mutating func next() async throws -> [UInt8]? { try await base.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        unread.iterated()
        return AsyncIterator(base: base.makeAsyncIterator(), guardToken: CancelOnRelease(cancel))
    }
}

/// Runs an action when released, unless the stream it guards was iterated (its iterator guards it then).
final class UnreadGuard: Sendable {
    let action: @Sendable () -> Void
    private let wasIterated = Atomic<Bool>(false)
    init(_ action: @escaping @Sendable () -> Void) { self.action = action }
    func iterated() { wasIterated.store(true, ordering: .relaxed) }
    deinit { if !wasIterated.load(ordering: .relaxed) { action() } }
}

/// Parsed server-sent event items of a streaming transfer (no extra task: parsing happens as the consumer pulls).
public struct EventItems: AsyncSequence, Sendable {
    public typealias Element = EventStreamItem
    let body: TransferStream

    public struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: TransferStream.AsyncIterator
        var parser = EventStreamParser()
        var ready: [EventStreamItem] = []
        var index = 0

        public mutating func next() async throws -> EventStreamItem? {
            while index >= ready.count {
                guard let chunk = try await chunks.next() else { return nil }
                ready = parser.feed(chunk)
                index = 0
            }
            defer { index += 1 }
            return ready[index]
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: body.makeAsyncIterator()) }
}

/// Runs an action when released.
final class CancelOnRelease: Sendable {
    let action: @Sendable () -> Void
    init(_ action: @escaping @Sendable () -> Void) { self.action = action }
    deinit { action() }
}
