import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
@testable import ServerSupport
import Synchronization
import Testing

/// The connection's handlers on `NIOAsyncTestingChannel`: bytes in, bytes out, time moved by hand. These reach the
/// interleavings a real socket cannot pin down (a head arriving while an answer is pending, a close mid-answer).
@Suite struct BufferedHTTPChannelTests {
    static let limits = ConnectionLimits(idleTimeout: .seconds(60), requestTimeout: .seconds(10), maxPipelined: 4)

    /// Whether the slow route's task saw its cancellation.
    final class Flags: Sendable {
        let slowCancelled = Mutex(false)
        let slowStarted = Mutex(false)
    }

    /// Turns the encoder's `IOData` and the raw refusals' `ByteBuffer` into one kind of outbound write.
    final class OutboundBytes: ChannelOutboundHandler {
        typealias OutboundIn = IOData
        typealias OutboundOut = ByteBuffer
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            switch unwrapOutboundIn(data) {
            case .byteBuffer(let bytes): context.write(wrapOutboundOut(bytes), promise: promise)
            case .fileRegion: promise?.fail(ChannelError.operationUnsupported)
            }
        }
    }

    /// A connected channel with the server's pipeline and a small router.
    func connection(_ flags: Flags = Flags(), h2c: Bool = false) async throws -> NIOAsyncTestingChannel {
        let router = Router(context: BasicRequestContext.self)
        router.get("/a") { _, _ in "a" }
        router.head("/a") { _, _ in "a" }
        router.post("/echo") { request, _ in
            try await request.body.collect(upTo: 1 << 20)
        }
        router.get("/slow") { _, _ -> String in
            flags.slowStarted.withLock { $0 = true }
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                flags.slowCancelled.withLock { $0 = true }
                throw error
            }
            return "slow"
        }
        let setup = BufferedHTTPChannel(responder: router.buildResponder(), bodyCap: 1 << 20, serverName: "test",
                                        logger: Logger(label: "test"), limits: Self.limits, h2c: h2c)
        let channel = NIOAsyncTestingChannel()
        _ = try await channel.eventLoop.flatSubmit { setup.setup(channel: channel, logger: Logger(label: "test")) }.get()
        try await channel.pipeline.addHandler(OutboundBytes(), position: .first)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).get()
        return channel
    }

    /// Everything written to the client until `text` appears (or 5 s pass).
    func output(_ channel: NIOAsyncTestingChannel, until text: String) async throws -> String {
        var collected = ""
        let end = ContinuousClock.now + .seconds(5)
        while !collected.contains(text) && ContinuousClock.now < end {
            if let bytes = try await channel.readOutbound(as: ByteBuffer.self) {
                collected += String(buffer: bytes)
            } else {
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        return collected
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        let end = ContinuousClock.now + .seconds(5)
        while !condition() && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(2)) }
    }

    func statusLines(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
    }

    @Test func aRequestIsAnswered() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.1\r\n\r\n"))
        let out = try await output(channel, until: "\r\n\r\na")
        #expect(out.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(out.contains("content-length: 1\r\n"))
        #expect(channel.isActive)
    }

    /// With h2c on, a connection's first bytes decide: HTTP/1 ones (even split, `P` then `OST`) go to the HTTP/1 pipeline.
    @Test func anHTTP1RequestPassesTheH2CDetector() async throws {
        let channel = try await connection(h2c: true)
        try await channel.writeInbound(ByteBuffer(string: "P"))
        try await channel.writeInbound(ByteBuffer(string: "OST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nok"))
        let out = try await output(channel, until: "\r\n\r\nok")
        #expect(out.hasPrefix("HTTP/1.1 200 OK\r\n"))
        await #expect(throws: (any Error).self) { try await channel.pipeline.handler(type: HTTP2PrefaceDetector.self).get() }
    }

    @Test func aSilentConnectionIsClosedByTheH2CDetector() async throws {
        let channel = try await connection(h2c: true)
        await channel.testingEventLoop.advanceTime(by: .seconds(60))
        try await channel.closeFuture.get()
    }

    @Test func aSilentConnectionClosesWhenTheServerStops() async throws {
        let channel = try await connection(h2c: true)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try await channel.closeFuture.get()
    }

    /// Issue 31's probe: `GET /a` whole, then a `POST` head with `Content-Length: 1000` and no body, in one write.
    @Test func aPipelinedHeadWithoutItsBodyGets408() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.1\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"))
        _ = try await output(channel, until: "\r\n\r\na")
        await channel.testingEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        await channel.testingEventLoop.advanceTime(by: .seconds(1))
        let out = try await output(channel, until: "request_timeout")
        #expect(statusLines(out) == ["408"])
        try await channel.closeFuture.get()
    }

    @Test func aSlowBodyGets408() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nab"))
        await channel.testingEventLoop.advanceTime(by: .seconds(10))
        let out = try await output(channel, until: "request_timeout")
        #expect(out.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        try await channel.closeFuture.get()
    }

    @Test func aPartialSecondRequestGetsTheRequestTimeoutNotTheIdleOne() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.1\r\n\r\nGET /a HT"))
        _ = try await output(channel, until: "\r\n\r\na")
        await channel.testingEventLoop.advanceTime(by: .seconds(10))
        let out = try await output(channel, until: "request_timeout")
        #expect(statusLines(out) == ["408"])
    }

    @Test func anIdleConnectionClosesAtTheIdleTimeout() async throws {
        let channel = try await connection()
        await channel.testingEventLoop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        await channel.testingEventLoop.advanceTime(by: .seconds(1))
        try await channel.closeFuture.get()
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\none"
            + "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\ntwo" + "GET /a HTTP/1.1\r\n\r\n"))
        let out = try await output(channel, until: "\r\n\r\na")
        let one = try #require(out.range(of: "one")), two = try #require(out.range(of: "two"))
        #expect(one.lowerBound < two.lowerBound)
        #expect(statusLines(out) == ["200", "200", "200"])
    }

    @Test func aClientPipeliningPastTheCapIsDisconnected() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: String(repeating: "GET /slow HTTP/1.1\r\n\r\n", count: 5)))
        try await channel.closeFuture.get()
    }

    @Test func aHeadAnswerHasNoBody() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "HEAD /a HTTP/1.1\r\n\r\nGET /a HTTP/1.1\r\n\r\n"))
        let out = try await output(channel, until: "\r\n\r\na")
        // The HEAD answer's headers (with the GET's length), then at once the GET's answer: no body between them.
        #expect(out.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let parts = out.components(separatedBy: "\r\n\r\n")
        #expect(parts.count == 3)
        #expect(parts[1].hasPrefix("HTTP/1.1 200 OK"))
        #expect(parts[0].contains("content-length: 1"))
    }

    @Test func anHTTP10KeepAliveIsEchoed() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
        let out = try await output(channel, until: "\r\n\r\na")
        #expect(out.lowercased().contains("connection: keep-alive\r\n"))
        #expect(channel.isActive)
        try await channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.0\r\n\r\n"))
        let second = try await output(channel, until: "\r\n\r\na")
        #expect(second.contains("connection: close\r\n"))
        try await channel.closeFuture.get()
    }

    @Test func aRequestsTaskIsCancelledWhenItsConnectionCloses() async throws {
        let flags = Flags()
        let channel = try await connection(flags)
        try await channel.writeInbound(ByteBuffer(string: "GET /slow HTTP/1.1\r\n\r\n"))
        try await waitUntil { flags.slowStarted.withLock { $0 } }
        try await channel.close()
        try await waitUntil { flags.slowCancelled.withLock { $0 } }
        #expect(flags.slowCancelled.withLock { $0 })
    }

    /// Issue 49: the end of the client's side mid-answer used to draw an unasked `100 Continue` (a probe); now
    /// nothing is written until the answer, and the work goes on.
    @Test func aClientWhoseSideEndsMidAnswerIsSentNothingUnasked() async throws {
        let flags = Flags()
        let channel = try await connection(flags)
        try await channel.writeInbound(ByteBuffer(string: "GET /slow HTTP/1.1\r\n\r\n"))
        try await waitUntil { flags.slowStarted.withLock { $0 } }
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(channel.isActive)
        #expect(!flags.slowCancelled.withLock { $0 })
    }

    /// `100 Continue` goes to an HTTP/1.1 request that asks for it, and never to HTTP/1.0 (RFC 9110 §10.1.1) or to a
    /// request that did not ask.
    @Test func continueGoesOnlyToHTTP11RequestsThatAskForIt() async throws {
        for (request, continues) in [("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", true),
                                     ("POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", false),
                                     ("POST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\n", false)] {
            let channel = try await connection()
            try await channel.writeInbound(ByteBuffer(string: request))
            try await channel.writeInbound(ByteBuffer(string: "hi"))
            let out = try await output(channel, until: "\r\n\r\nhi")
            #expect(out.hasPrefix("HTTP/1.1 100 Continue\r\n\r\n") == continues, "\(request)")
            #expect(out.contains("200 OK"), "\(request)")
        }
    }

    @Test func aHalfClosedRequestIsAnsweredThenTheConnectionCloses() async throws {
        let channel = try await connection()
        // The request and the end of the client's side in one turn of the loop, before the answer can be written.
        try await channel.eventLoop.submit {
            channel.pipeline.fireChannelRead(ByteBuffer(string: "POST /echo HTTP/1.0\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi"))
            channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }.get()
        let out = try await output(channel, until: "\r\n\r\nhi")
        #expect(out.hasPrefix("HTTP/1.1 200 OK"))
        #expect(out.contains("connection: close"))
        try await channel.closeFuture.get()
    }

    @Test func unparsableInputIsRefusedAsJSON() async throws {
        let channel = try await connection()
        try await channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.1\r\nBad Header\r\n\r\n"))
        let out = try await output(channel, until: "}}")
        #expect(out.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(out.contains("\"code\":\"bad_request\""))
        try await channel.closeFuture.get()
    }

    @Test func readsAreHeldWhileTheClientTakesNoOutput() async throws {
        let channel = try await connection()
        let reads = ReadCounter()
        try await channel.pipeline.addHandler(reads, position: .first)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.read()
        #expect(reads.count.withLock { $0 } == 0)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        try await waitUntil { reads.count.withLock { $0 } == 1 }
        #expect(reads.count.withLock { $0 } == 1)
    }

    @Test func quiesceAnswersTheRequestUnderWayWithCloseThenCloses() async throws {
        let channel = try await connection()
        try await channel.eventLoop.submit {
            channel.pipeline.fireChannelRead(ByteBuffer(string: "POST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nok"))
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }.get()
        let out = try await output(channel, until: "\r\n\r\nok")
        #expect(out.contains("connection: close"))
        try await channel.closeFuture.get()
    }

    @Test func quiesceClosesAnIdleConnection() async throws {
        let channel = try await connection()
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try await channel.closeFuture.get()
    }

    /// Counts the reads that reach the socket.
    final class ReadCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = Any
        let count = Mutex(0)
        func read(context: ChannelHandlerContext) {
            count.withLock { $0 += 1 }
            context.read()
        }
    }
}
