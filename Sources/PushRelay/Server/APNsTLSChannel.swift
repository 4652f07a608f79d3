import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import NIOTLS
import ServerSupport

/// The relay's TLS port, as Apple serves APNs: TLS, then HTTP/2 when ALPN chose `h2`, HTTP/1.1 when it chose
/// `http/1.1`, and, when the client offered no ALPN at all (aioapns does not), HTTP/2 if its first bytes are HTTP/2's
/// connection preface, else HTTP/1.1. Hummingbird's HTTP/1 and HTTP/2 channels serve the requests with the relay's router.
///
/// Hummingbird's `HTTP2UpgradeChannel` does the same without the last case: a client without ALPN is served HTTP/1.1,
/// and its HTTP/2 preface is refused.
struct APNsTLSChannel: ServerChildChannel {
    enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        case http2(HTTP2Channel.Value)
    }

    /// A connection once its protocol is known.
    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    /// What ALPN decided: a protocol, or (no ALPN) what the first bytes will.
    private enum ALPNOutcome: Sendable {
        case decided(Negotiated)
        case sniffed(EventLoopFuture<Negotiated>)
    }

    /// ALPN chose a protocol other than `h2` and `http/1.1` (a misconfiguration): the connection is closed.
    struct UnsupportedProtocol: Error {}

    let context: NIOSSLContext
    let http1: HTTP1Channel
    let http2: HTTP2Channel

    init(tls: TLSConfiguration, responder: @escaping HTTPChannelHandler.Responder) throws {
        var tls = tls
        tls.applicationProtocols = ["h2", "http/1.1"]
        context = try NIOSSLContext(configuration: tls)
        http1 = HTTP1Channel(responder: responder)
        http2 = HTTP2Channel(responder: responder)
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let http1 = self.http1, http2 = self.http2
        let negotiation = channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
            let alpn = NIOTypedApplicationProtocolNegotiationHandler<ALPNOutcome> { result in
                switch result {
                case .negotiated("h2"):
                    return http2.setup(channel: channel, logger: logger).map { .decided(.http2($0)) }
                case .negotiated("http/1.1"):
                    return http1.setup(channel: channel, logger: logger).map { .decided(.http1($0)) }
                case .fallback:
                    // No ALPN: the first bytes tell. The detector sits behind this handler, which replays what it held.
                    let promise = channel.eventLoop.makePromise(of: Negotiated.self)
                    // A connection that closes before its first bytes decide ends its wait (the server's task for it).
                    let decided = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
                    channel.closeFuture.whenComplete { _ in
                        if !decided.value { promise.fail(ChannelError.ioOnClosedChannel) }
                    }
                    let detector = HTTP2PrefaceDetector(idleTimeout: .seconds(60)) { _, isHTTP2 in
                        decided.value = true
                        // Both setups add their handlers at once (completed futures on this loop), before the
                        // detector leaves and passes the bytes on.
                        let configured: EventLoopFuture<Negotiated> = isHTTP2
                            ? http2.setup(channel: channel, logger: logger).map { .http2($0) }
                            : http1.setup(channel: channel, logger: logger).map { .http1($0) }
                        configured.cascade(to: promise)
                    }
                    do {
                        try channel.pipeline.syncOperations.addHandler(detector)
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                    return channel.eventLoop.makeSucceededFuture(.sniffed(promise.futureResult))
                case .negotiated:
                    return channel.close().flatMapThrowing { throw UnsupportedProtocol() }
                }
            }
            try channel.pipeline.syncOperations.addHandler(alpn)
            return alpn.protocolNegotiationResult
        }
        let negotiated = negotiation.flatMap { $0 }.flatMap { outcome -> EventLoopFuture<Negotiated> in
            switch outcome {
            case .decided(let value):
                return channel.eventLoop.makeSucceededFuture(value)
            case .sniffed(let negotiated):
                return negotiated
            }
        }
        return channel.eventLoop.makeSucceededFuture(Value(negotiated: negotiated, channel: channel))
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let channel): await http1.handle(value: channel, logger: logger)
            case .http2(let channel): await http2.handle(value: channel, logger: logger)
            }
        } catch {
            logger.debug("TLS connection ended before its protocol was known: \(error)")
        }
    }
}
