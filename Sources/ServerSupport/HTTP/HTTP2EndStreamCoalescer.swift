import NIOCore
import NIOHTTP2

/// Ends an HTTP/2 answer on its last frame, as APNs does (PROTOCOL.md §9): HEADERS with END_STREAM for an empty body,
/// else END_STREAM on the last DATA frame.
///
/// NIO's `HTTP2FramePayloadToHTTP1ServerCodec` turns a response's `.end` into a DATA frame of its own, empty, with
/// END_STREAM; clients that parse every DATA frame as a body (aioapns) fail on it and drop the connection. Placed in
/// front of that codec, this holds the last HEADERS or DATA frame written until the next write or a flush: an empty
/// END_STREAM DATA frame that follows it is folded into it. (The client codec of swift-nio-http2 does the same.)
final class HTTP2EndStreamCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private var held: (frame: HTTP2Frame.FramePayload, promise: EventLoopPromise<Void>?)?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if let (previous, previousPromise) = held, Self.isEmptyEnd(frame), let ended = Self.ending(previous) {
            held = nil
            var combined = previousPromise
            combined.setOrCascade(to: promise)
            context.write(wrapOutboundOut(ended), promise: combined)
            return
        }
        releaseHeld(context)
        switch frame {
        case .headers(let headers) where !headers.endStream && !Self.isInterim(headers):
            held = (frame, promise)
        case .data(let data) where !data.endStream:
            held = (frame, promise)
        default:
            context.write(data, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        releaseHeld(context)
        context.flush()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        releaseHeld(context)
    }

    private func releaseHeld(_ context: ChannelHandlerContext) {
        guard let (frame, promise) = held else { return }
        held = nil
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    /// A DATA frame with no bytes and END_STREAM: the codec's way to end a stream.
    static func isEmptyEnd(_ frame: HTTP2Frame.FramePayload) -> Bool {
        guard case .data(let data) = frame, data.endStream, data.paddingBytes == nil else { return false }
        switch data.data {
        case .byteBuffer(let bytes): return bytes.readableBytes == 0
        case .fileRegion(let region): return region.readableBytes == 0
        }
    }

    /// `frame` with END_STREAM set, when it is a HEADERS or DATA frame.
    static func ending(_ frame: HTTP2Frame.FramePayload) -> HTTP2Frame.FramePayload? {
        switch frame {
        case .headers(var headers):
            headers.endStream = true
            return .headers(headers)
        case .data(var data):
            data.endStream = true
            return .data(data)
        default:
            return nil
        }
    }

    /// A 1xx HEADERS frame (`100 Continue`): never the end of an answer.
    static func isInterim(_ headers: HTTP2Frame.FramePayload.Headers) -> Bool {
        headers.headers.first(name: ":status")?.hasPrefix("1") ?? false
    }
}
