import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 channel with this project's connection hygiene added to each connection's pipeline: the
/// deadlines handler in front of the HTTP codec and the request counter behind it (``ConnectionLimits``).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits
    let serverName: String

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let hygiene = ConnectionHygiene(limits: limits, serverName: serverName)
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ConnectionTimerHandler(hygiene), position: .first)
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }.flatMapThrowing { value in
            let codec = try channel.pipeline.syncOperations.handler(type: HTTP1ToHTTPServerCodec.self)
            try channel.pipeline.syncOperations.addHandler(RequestPartsHygieneHandler(httpTypes: hygiene), position: .after(codec))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with ``ConnectionLimits`` applied to every connection.
    static func guardedHTTP1(limits: ConnectionLimits, serverName: String) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            GuardedHTTP1Channel(inner: HTTP1Channel(responder: responder), limits: limits, serverName: serverName)
        }
    }
}
