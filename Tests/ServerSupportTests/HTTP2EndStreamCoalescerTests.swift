import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
@testable import ServerSupport
import Testing

/// The coalescer in front of NIO's HTTP/2 server codec, on an embedded stream pipeline: every answer ends its stream
/// on its last frame (issue 49: a 200 was HEADERS + an empty END_STREAM DATA frame, a 410 HEADERS + DATA + an empty
/// one, and aioapns dropped the connection on it).
@Suite struct HTTP2EndStreamCoalescerTests {
    /// What reaches the wire for `parts` written as `BufferedHTTPHandler` writes an answer (flushing after the end).
    func frames(_ parts: [HTTPServerResponsePart], flushEach: Bool = false) throws -> [HTTP2Frame.FramePayload] {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTP2EndStreamCoalescer())
        try channel.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
        // The codec needs to have seen a request on the stream before it answers.
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: [":method": "GET", ":path": "/", ":scheme": "https",
                                                                                 ":authority": "x"], endStream: true)))
        while try channel.readInbound(as: HTTPServerRequestPart.self) != nil {}
        for part in parts {
            if flushEach { channel.writeAndFlush(part, promise: nil) } else { channel.write(part, promise: nil) }
        }
        channel.flush()
        var out: [HTTP2Frame.FramePayload] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) { out.append(frame) }
        return out
    }

    func describe(_ frames: [HTTP2Frame.FramePayload]) -> [String] {
        frames.map { frame in
            switch frame {
            case .headers(let h): "HEADERS\(h.endStream ? "+END" : "")"
            case .data(let d):
                if case .byteBuffer(let b) = d.data { "DATA(\(b.readableBytes))\(d.endStream ? "+END" : "")" } else { "DATA(file)" }
            default: "other"
            }
        }
    }

    let head = HTTPServerResponsePart.head(HTTPResponseHead(version: .http2, status: .ok))

    @Test func anEmptyAnswerIsOneHeadersFrameThatEndsTheStream() throws {
        #expect(describe(try frames([head, .end(nil)])) == ["HEADERS+END"])
    }

    @Test func aBodyEndsTheStreamOnItsOwnFrame() throws {
        #expect(describe(try frames([head, .body(.byteBuffer(ByteBuffer(string: "{\"reason\":\"Unregistered\"}"))), .end(nil)]))
                == ["HEADERS", "DATA(25)+END"])
    }

    @Test func aStreamedBodyGoesOutAtEachFlushAndEndsOnAnEmptyFrame() throws {
        // An event stream flushes each part: nothing may wait for the next write, so its end is a frame of its own.
        #expect(describe(try frames([head, .body(.byteBuffer(ByteBuffer(string: "a"))), .body(.byteBuffer(ByteBuffer(string: "b"))), .end(nil)],
                                    flushEach: true)) == ["HEADERS", "DATA(1)", "DATA(1)", "DATA(0)+END"])
    }

    @Test func trailersEndTheStreamThemselves() throws {
        #expect(describe(try frames([head, .body(.byteBuffer(ByteBuffer(string: "ab"))), .end(["x-t": "1"])]))
                == ["HEADERS", "DATA(2)", "HEADERS+END"])
    }

    @Test func anInterimAnswerIsNeverHeld() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTP2EndStreamCoalescer())
        channel.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: [":status": "100"])), promise: nil)
        channel.write(HTTP2Frame.FramePayload.headers(.init(headers: [":status": "200"])), promise: nil)
        channel.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)), promise: nil)
        var out: [HTTP2Frame.FramePayload] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) { out.append(frame) }
        #expect(describe(out) == ["HEADERS", "HEADERS+END"])
    }
}
