import NIOCore
import NIOPosix
import ServerSupport
import Transport

/// The load tool's HTTP/1.1 client on NIO event loops, built like wrk: each loop owns its keep-alive connections, and
/// an iteration running on a loop (``taskExecutors``) sends, awaits and reads its answer without leaving that thread.
///
/// libcurl's client (``Transport/TransportClient``) runs its transfers on a thread of its own: every request crosses
/// from a Swift task to that thread and every answer back (a futex wake and a context switch each way, and an eventfd
/// write per new request), which cost the load tool more CPU per request than the server it measured. Plain `http://`
/// goes through the loops; anything else (https) goes to `fallback`.
final class LoopHTTPClient: HTTPTransport {
    let group: MultiThreadedEventLoopGroup
    /// Per loop, in the group's order.
    private let loops: [any EventLoop]
    private let pools: [NIOLoopBoundBox<LoopPool>]
    /// One task executor per loop: an iteration task that prefers one runs on that loop, and so does its HTTP.
    let executors: [EventLoopTaskExecutor]
    let fallback: TransportClient
    let defaultTimeout: Duration

    /// - Parameters:
    ///   - threads: event loops (one per core the tool may use).
    ///   - maxConnectionsPerHost: keep-alive connections to one target at most, over all loops (event streams aside).
    init(threads: Int, maxConnectionsPerHost: Int, defaultTimeout: Duration, connectTimeout: Duration, fallback: TransportClient) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
        loops = Array(group.makeIterator())
        let perLoop = max(1, maxConnectionsPerHost / loops.count)
        let connect = TimeAmount.nanoseconds(Int64(connectTimeout.seconds * 1e9))
        pools = loops.map { .makeBoxSendingValue(LoopPool(loop: $0, maxPerTarget: perLoop, connectTimeout: connect), eventLoop: $0) }
        executors = loops.map { EventLoopTaskExecutor($0) }
        self.fallback = fallback
        self.defaultTimeout = defaultTimeout
    }

    /// Stops the loops (their connections close).
    func shutdown() async {
        try? await group.shutdownGracefully()
    }

    /// The loop the caller runs on, or the next one.
    private func pool() -> NIOLoopBoundBox<LoopPool> {
        if let index = loops.firstIndex(where: { $0.inEventLoop }) { return pools[index] }
        return pools[Int.random(in: 0..<pools.count)]
    }

    /// A header with a line break would split the request (`invalid_request`, as ``Transport/TransportClient`` says).
    static func check(_ request: TransportRequest) throws(TransportError) {
        for header in request.headers where header.name.utf8.contains(where: { $0 == 13 || $0 == 10 }) || header.value.utf8.contains(where: { $0 == 13 || $0 == 10 }) {
            throw TransportError(code: "invalid_request", message: "header \(header.name) contains a line break")
        }
    }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        guard let (target, path) = LoopTarget.parse(request.url) else { return try await fallback.send(request) }
        try Self.check(request)
        let pool = pool()
        let loop = pool.eventLoop
        let timeout = TimeAmount.nanoseconds(Int64((request.timeout ?? defaultTimeout).seconds * 1e9))
        // A continuation the connection resumes rather than a promise and its future: one allocation and one callback
        // less per request (the iteration that awaits runs on this loop, and so does its answer).
        do {
            return try await withUnsafeThrowingContinuation { continuation in
                let pending = LoopPool.Pending(request: request, path: path, reply: LoopReply(continuation), timeout: timeout)
                if loop.inEventLoop {
                    pool.value.execute(pending, target: target)
                } else {
                    loop.execute { pool.value.execute(pending, target: target) }
                }
            }
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(code: "connection_closed", message: "\(error)")
        }
    }

    func eventStream(_ request: TransportRequest) async throws(TransportError) -> TransportClient.EventStream {
        guard let (target, path) = LoopTarget.parse(request.url) else { return try await fallback.eventStream(request) }
        try Self.check(request)
        var request = request
        if !request.headers.contains(where: { $0.name.lowercased() == "accept" }) { request.headers.append(("Accept", "text/event-stream")) }
        let pool = pool()
        let loop = pool.eventLoop
        let head = loop.makePromise(of: (Int, [(name: String, value: String)]).self)
        let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let connection = loop.makePromise(of: NIOLoopBound<LoopExchangeHandler>.self)
        let localAddress = request.localAddress
        let open: @Sendable () -> Void = { [request] in
            pool.value.openStream(target, localAddress: localAddress).whenComplete { result in
                switch result {
                case .success(let handler):
                    handler.value.stream(request, path: path, target: target, exchange: .init(head: head, chunks: continuation))
                    connection.succeed(handler)
                case .failure(let error):
                    head.fail(error)
                    continuation.finish(throwing: error)
                    connection.fail(error)
                }
            }
        }
        if loop.inEventLoop { open() } else { loop.execute(open) }
        let status: Int
        let headers: [(name: String, value: String)]
        do {
            (status, headers) = try await head.futureResult.get()
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(code: "connection_closed", message: "\(error)")
        }
        // The reader stopping (its loop left, the stream dropped) closes the connection, as an aborted transfer.
        let close: @Sendable () -> Void = { connection.futureResult.whenSuccess { $0.value.close() } }
        return TransportClient.EventStream(status: status, headers: headers, chunks: chunks, onCancel: close)
    }
}
