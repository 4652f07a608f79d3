import NIOCore
import NIOHTTP1
import Transport

/// One connection of the loop client, behind NIO's HTTP/1 client codec: writes a request, collects its response (whole,
/// or as a stream's chunks), and tells its owner when the connection is free again or gone. Lives on its channel's
/// event loop; every method is called there.
final class LoopExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    /// A request whose whole response is awaited.
    struct Buffered {
        var promise: EventLoopPromise<TransportResponse>
        var reused: Bool
        var head: HTTPResponseHead?
        var body: ByteBuffer?
        var timeout: Scheduled<Void>?
        /// For a request on a reused connection: sends it again on another connection if this one closes before any of
        /// the answer arrived (the server closed it while idle, as the request went out), as libcurl does.
        var resend: (() -> Void)?
    }

    /// An event stream: the head answers `head`, the body's chunks go to `chunks` as they arrive.
    struct Streaming {
        var head: EventLoopPromise<(Int, [(name: String, value: String)])>?
        var chunks: AsyncThrowingStream<[UInt8], any Error>.Continuation
    }

    enum State {
        case idle
        case buffered(Buffered)
        case streaming(Streaming)
        case closed
    }

    private(set) var state = State.idle
    private var context: ChannelHandlerContext?
    /// Called when a response has been read whole: `true` when the connection may carry another request.
    var onDone: (Bool) -> Void = { _ in }
    /// Called once, when the connection has closed.
    var onClosed: () -> Void = {}

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Writes `request` (to `path` on `target`) and collects its response into `exchange`.
    func send(_ request: TransportRequest, path: String, target: LoopTarget, exchange: Buffered) {
        guard case .idle = state, let context else {
            exchange.promise.fail(TransportError(code: "connection_closed", message: "the connection closed before the request was sent"))
            return
        }
        state = .buffered(exchange)
        write(request, path: path, target: target, context: context)
    }

    /// Writes `request` and streams its response: `head` gets the status and headers, `chunks` the body.
    func stream(_ request: TransportRequest, path: String, target: LoopTarget, exchange: Streaming) {
        guard case .idle = state, let context else {
            let error = TransportError(code: "connection_closed", message: "the connection closed before the request was sent")
            exchange.head?.fail(error)
            exchange.chunks.finish(throwing: error)
            return
        }
        state = .streaming(exchange)
        write(request, path: path, target: target, context: context)
    }

    private func write(_ request: TransportRequest, path: String, target: LoopTarget, context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: path)
        head.headers.reserveCapacity(request.headers.count + 2)
        head.headers.add(name: "Host", value: target.hostHeader)
        for header in request.headers { head.headers.add(name: header.name, value: header.value) }
        let body = request.body ?? []
        if !body.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH" {
            head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Closes the connection (a response that did not allow another request on it).
    func close() { context?.close(promise: nil) }

    /// The request in flight took too long: it fails with `timeout` and the connection closes.
    func timedOut() {
        guard case .buffered(let exchange) = state else { return }
        state = .closed
        exchange.promise.fail(TransportError(code: "timeout", message: "no whole response within the request's timeout"))
        context?.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .buffered(var exchange):
            switch part {
            case .head(let head):
                exchange.head = head
                state = .buffered(exchange)
            case .body(var bytes):
                if exchange.body == nil { exchange.body = bytes } else { exchange.body!.writeBuffer(&bytes) }
                state = .buffered(exchange)
            case .end:
                exchange.timeout?.cancel()
                state = .idle
                let head = exchange.head
                let body = exchange.body.map { Array($0.readableBytesView) } ?? []
                let response = TransportResponse(status: Int(head?.status.code ?? 0),
                                                 headers: head?.headers.map { (name: $0.name, value: $0.value) } ?? [],
                                                 body: body, connectionReused: exchange.reused)
                exchange.promise.succeed(response)
                onDone(head?.isKeepAlive ?? false)
            }
        case .streaming(var exchange):
            switch part {
            case .head(let head):
                exchange.head?.succeed((Int(head.status.code), head.headers.map { (name: $0.name, value: $0.value) }))
                exchange.head = nil
                state = .streaming(exchange)
            case .body(let bytes):
                exchange.chunks.yield(Array(bytes.readableBytesView))
            case .end:
                state = .closed
                exchange.chunks.finish()
                context.close(promise: nil)
            }
        case .idle, .closed:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(TransportError(code: "connection_closed", message: "\(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(TransportError(code: "connection_closed", message: "the server closed the connection before the whole response"))
        self.context = nil
        onClosed()
        onClosed = {}
        onDone = { _ in }
    }

    private func fail(_ error: TransportError) {
        switch state {
        case .buffered(let exchange):
            exchange.timeout?.cancel()
            if exchange.head == nil, let resend = exchange.resend {
                state = .closed
                resend()
                return
            }
            exchange.promise.fail(error)
        case .streaming(let exchange):
            exchange.head?.fail(error)
            exchange.chunks.finish(throwing: error)
        case .idle, .closed:
            break
        }
        state = .closed
    }
}
