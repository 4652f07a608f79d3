import NIOCore
import Transport

/// One connection of the loop client: writes a request (``LoopRequestEncoder``), reads its response with a
/// ``LoopResponseParser`` (whole, or as a stream's chunks), and tells its owner when the connection is free again or
/// gone. Lives on its channel's event loop; every method is called there.
final class LoopExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A request whose whole response is awaited.
    struct Buffered {
        /// The awaiting request, resumed exactly once: with the response, or with why there is none.
        var reply: LoopReply
        var reused: Bool
        var head: LoopResponseParser.Head?
        var body: ByteBuffer?
        /// When the request fails with `timeout` (the pool's deadline check, ``LoopPool``, calls ``timedOut()``).
        var deadline: NIODeadline
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
    private var parser = LoopResponseParser()
    /// Bytes read and not yet parsed.
    private var unread: ByteBuffer?
    /// The `Host` header of this connection's requests (one target per connection), made at its first request.
    private var hostHeader: String?
    /// Called when a response has been read whole: `true` when the connection may carry another request.
    var onDone: (Bool) -> Void = { _ in }
    /// Called once, when the connection has closed.
    var onClosed: () -> Void = {}

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Writes `request` (to `path` on `target`) and collects its response into `exchange`.
    func send(_ request: TransportRequest, path: String, target: LoopTarget, exchange: Buffered) {
        guard case .idle = state, let context else {
            exchange.reply.fail(TransportError(code: "connection_closed", message: "the connection closed before the request was sent"))
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
        unread = nil
        parser.expect(head: request.method == "HEAD")
        var bytes = context.channel.allocator.buffer(capacity: 0)
        if hostHeader == nil { hostHeader = target.hostHeader }
        LoopRequestEncoder.encode(request, path: path, host: hostHeader!, into: &bytes)
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
    }

    /// Closes the connection (a response that did not allow another request on it).
    func close() { context?.close(promise: nil) }

    /// The deadline of the request in flight, if one is.
    var deadline: NIODeadline? {
        if case .buffered(let exchange) = state { return exchange.deadline }
        return nil
    }

    /// The request in flight took too long: it fails with `timeout` and the connection closes.
    func timedOut() {
        guard case .buffered(let exchange) = state else { return }
        state = .closed
        exchange.reply.fail(TransportError(code: "timeout", message: "no whole response within the request's timeout"))
        context?.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard case .idle = state else {
            if unread == nil { unread = incoming } else { unread!.writeBuffer(&incoming) }
            return drain(context: context)
        }
        // Nothing was asked: bytes between responses are not an answer to anything.
    }

    /// Performs what the parser reads from `unread` until it needs more bytes or the response has ended.
    private func drain(context: ChannelHandlerContext) {
        guard var bytes = unread else { return }
        unread = nil
        while true {
            let step = parser.next(&bytes)
            switch step {
            case .needMore:
                if bytes.readableBytes > 0 { unread = bytes }
                return
            case .end(let keepAlive):
                // Whatever follows the response is no answer; the owner may send the next request from `ended`.
                ended(keepAlive: keepAlive, context: context)
                return
            case .invalid(let message):
                fail(TransportError(code: "invalid_response", message: message))
                context.close(promise: nil)
                return
            case .head(let head):
                switch state {
                case .buffered(var exchange):
                    exchange.head = head
                    state = .buffered(exchange)
                case .streaming(var exchange):
                    exchange.head?.succeed((head.status, head.headers))
                    exchange.head = nil
                    state = .streaming(exchange)
                case .idle, .closed:
                    break
                }
            case .body(var piece):
                switch state {
                case .buffered(var exchange):
                    if exchange.body == nil { exchange.body = piece } else { exchange.body!.writeBuffer(&piece) }
                    state = .buffered(exchange)
                case .streaming(let exchange):
                    exchange.chunks.yield(Array(piece.readableBytesView))
                case .idle, .closed:
                    break
                }
            }
        }
    }

    private func ended(keepAlive: Bool, context: ChannelHandlerContext?) {
        switch state {
        case .buffered(let exchange):
            state = .idle
            let body = exchange.body.map { Array($0.readableBytesView) } ?? []
            let response = TransportResponse(status: exchange.head?.status ?? 0, headers: exchange.head?.headers ?? [],
                                             body: body, connectionReused: exchange.reused)
            exchange.reply.succeed(response)
            onDone(keepAlive)
        case .streaming(let exchange):
            state = .closed
            exchange.chunks.finish()
            context?.close(promise: nil)
        case .idle, .closed:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(TransportError(code: "connection_closed", message: "\(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A body framed by the close ends here; inside any other response the close is the error (nothing between).
        var message = "the server closed the connection before the whole response"
        switch parser.closed() {
        case .end(let keepAlive): ended(keepAlive: keepAlive, context: nil)
        case .invalid(let why): message = why
        default: break
        }
        fail(TransportError(code: "connection_closed", message: message))
        self.context = nil
        onClosed()
        onClosed = {}
        onDone = { _ in }
    }

    private func fail(_ error: TransportError) {
        switch state {
        case .buffered(let exchange):
            // Not a byte of the answer read (so no head either): the request may go again on another connection.
            if !parser.hasBegun, let resend = exchange.resend {
                state = .closed
                resend()
                return
            }
            exchange.reply.fail(error)
        case .streaming(let exchange):
            exchange.head?.fail(error)
            exchange.chunks.finish(throwing: error)
        case .idle, .closed:
            break
        }
        state = .closed
    }
}
