import Foundation
import Testing
@testable import Transport

/// Polls until `condition` holds (at most 10 s).
func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

@Suite struct TransportClientTests {
    @Test func getPostPutAndStatuses() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        let hello = try await client.send(TransportRequest(url: server.url + "/hello"))
        #expect(hello.status == 200)
        #expect(hello.text == "hello")

        let form = try await client.send(.form(server.url + "/echo", "a=1&b=%20"))
        #expect(form.text == "a=1&b=%20")
        #expect(form.header("content-type") == "application/x-www-form-urlencoded")
        #expect(form.header("X-Method") == "POST")

        let json = try await client.send(.json(server.url + "/echo", method: "PUT", body: ["k": "v"]))
        #expect(json.text == #"{"k":"v"}"#)
        #expect(json.header("x-method") == "PUT")

        let big = [UInt8](repeating: 7, count: 3 << 20)
        let echoed = try await client.send(TransportRequest(method: "POST", url: server.url + "/echo", body: big))
        #expect(echoed.body == big)

        #expect(try await client.send(TransportRequest(url: server.url + "/status/418")).status == 418)
        #expect(try await client.send(TransportRequest(url: server.url + "/nope")).status == 404)
        await server.stop()
    }

    @Test func reusesConnections() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        let first = try await client.send(TransportRequest(url: server.url + "/hello"))
        #expect(!first.connectionReused)
        for _ in 0..<5 {
            #expect(try await client.send(TransportRequest(url: server.url + "/hello")).connectionReused)
        }
        await server.stop()
    }

    /// A bounded client keeps as many idle connections as it may open: after a burst of transfers ends, the next
    /// burst finds all of them. (libcurl's default cache holds four per transfer still running, so a burst that ends
    /// one transfer at a time used to close most of its connections, and an open-model load opened new ones all the
    /// time.)
    @Test func aBoundedClientKeepsItsConnectionsBetweenBursts() async throws {
        let server = try await TestServer.start()
        let width = 16
        let client = TransportClient(configuration: .init(maxConnectionsPerHost: width))
        defer { client.shutdown() }
        func burst() async throws -> [Bool] {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<width {
                    // Staggered ends: the transfers finish one at a time.
                    group.addTask { try await client.send(TransportRequest(url: server.url + "/delay?ms=\(100 + 20 * i)")).connectionReused }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        let first = try await burst()
        #expect(first.filter { !$0 }.count == width)
        let second = try await burst()
        #expect(second.filter { $0 }.count == width, "connections reused in the second burst")
        await server.stop()
    }

    @Test func runsManyTransfersConcurrentlyOnOneThread() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        let started = ContinuousClock.now
        let count = 200
        let ok = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask { try await client.send(TransportRequest(url: server.url + "/slow?ms=300")).text == "slept 300" }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let elapsed = ContinuousClock.now - started
        #expect(ok == count)
        // Sequentially this would take 60 s.
        #expect(elapsed < .seconds(20))
        await server.stop()
    }

    @Test func timeoutAbortsTheTransfer() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        var request = TransportRequest(url: server.url + "/slow?ms=30000")
        request.timeout = .milliseconds(200)
        await #expect(throws: TransportError(code: "timeout", message: "Timeout was reached")) {
            try await client.send(request)
        }
        #expect(try await eventually { server.abandonedCount == 1 })
        await server.stop()
    }

    @Test func cancellingTheTaskAbortsTheTransfer() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        let started = ContinuousClock.now
        let task = Task { try await client.send(TransportRequest(url: server.url + "/slow?ms=30000")) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let result = await task.result
        // The server would answer after 30 s; cancellation must not wait for that, and the server sees the close.
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(try await eventually { server.abandonedCount == 1 })
        guard case .failure(let error as TransportError) = result else {
            Issue.record("expected a cancelled transfer, got \(result)")
            return
        }
        #expect(error.code == "cancelled")
        // The client still works afterwards.
        #expect(try await client.send(TransportRequest(url: server.url + "/hello")).status == 200)
        await server.stop()
    }

    @Test func connectionRefusedIsATransportError() async throws {
        let client = TransportClient()
        defer { client.shutdown() }
        await #expect(throws: TransportError.self) {
            try await client.send(TransportRequest(url: "http://127.0.0.1:1/"))
        }
        await #expect(throws: TransportError.self) {
            try await client.send(TransportRequest(url: "not a url"))
        }
    }

    @Test func aHeaderWithALineBreakIsRefusedBeforeAnythingIsSent() async throws {
        let client = TransportClient()
        defer { client.shutdown() }
        for (name, value) in [("X-A", "one\r\nX-Injected: 1"), ("X-B", "two\nthree"), ("X-C\r", "v"), ("X-D", "\r")] {
            do {
                _ = try await client.send(TransportRequest(url: "http://127.0.0.1:1/", headers: [(name: name, value: value)]))
                Issue.record("a header with a line break was sent")
            } catch {
                #expect(error.code == "invalid_request")
            }
        }
    }

    @Test func shutdownFailsLaterRequests() async throws {
        let client = TransportClient()
        client.shutdown()
        await #expect(throws: TransportError.self) {
            try await client.send(TransportRequest(url: "http://127.0.0.1:1/"))
        }
    }

    @Test func gzipRoundTripAndLimit() throws {
        let text = Array(String(repeating: "telemetry ", count: 1000).utf8)
        let packed = Gzip.compress(text)
        #expect(packed.count < text.count / 10)
        #expect(packed.prefix(2) == [0x1f, 0x8b])
        #expect(try Gzip.decompress(packed, limit: 1 << 20) == text)
        #expect(throws: Gzip.Error.self) { try Gzip.decompress(packed, limit: 100) }
        #expect(throws: Gzip.Error.self) { try Gzip.decompress(Array(packed.prefix(10)), limit: 1 << 20) }
    }
}

@Suite struct EventStreamTests {
    @Test func parsesAcrossChunkBoundaries() {
        var parser = EventStreamParser()
        let text = ": keepalive\n\nid: 1\nevent: push\ndata: {\"a\":\ndata: 1}\n\ndata: plain\r\n\r\n"
        var items: [EventStreamItem] = []
        for byte in text.utf8 { items += parser.feed([byte]) }
        #expect(items == [
            .comment("keepalive"),
            .event(ServerSentEvent(id: "1", event: "push", data: "{\"a\":\n1}")),
            .event(ServerSentEvent(id: "1", event: "message", data: "plain")),
        ])
        #expect(parser.lastEventID == "1")
    }

    @Test func streamsEventsFromAServer() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        let stream = try await client.eventStream(TransportRequest(url: server.url + "/events"))
        #expect(stream.status == 200)
        var received: [EventStreamItem] = []
        for try await item in stream.items { received.append(item) }
        #expect(received.first == .comment("hello"))
        #expect(received.dropFirst().map { if case .event(let e) = $0 { e.data } else { "" } } == [#"{"n": 1}"#, #"{"n": 2}"#, #"{"n": 3}"#])
        await server.stop()
    }

    @Test func stoppingIterationAbortsAnEndlessStream() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        let stream = try await client.eventStream(TransportRequest(url: server.url + "/forever"))
        var count = 0
        for try await _ in stream.items {
            count += 1
            if count == 3 { break }
        }
        #expect(count == 3)
        // The driver is free for other work.
        #expect(try await client.send(TransportRequest(url: server.url + "/hello")).status == 200)
        await server.stop()
    }

    /// A task cancelled before its transfer reached the driver: the cancel used to be lost (it found nothing to cancel),
    /// and the request ran to its end. Now it is cancelled as it arrives.
    @Test func aCancelBeforeTheTransferIsSubmittedIsNotLost() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        for _ in 0..<5 {
            let started = ContinuousClock.now
            let task = Task { try await client.send(TransportRequest(url: server.url + "/slow?ms=3000")) }
            task.cancel()
            let result = await task.result
            #expect(ContinuousClock.now - started < .milliseconds(2500), "a cancelled send ran to the server's answer")
            guard case .failure(let error as TransportError) = result else {
                Issue.record("expected a cancelled transfer, got \(result)")
                continue
            }
            #expect(error.code == "cancelled")
        }
        await server.stop()
    }

    /// A streaming response dropped without reading its body aborts the transfer (as its documentation says).
    @Test func aStreamingResponseDroppedUnreadAbortsTheTransfer() async throws {
        let server = try await TestServer.start()
        let client = TransportClient()
        defer { client.shutdown() }
        do {
            let response = try await client.stream(TransportRequest(url: server.url + "/forever"))
            #expect(response.status == 200)
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while server.endedStreamCount == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(server.endedStreamCount == 1, "the server's stream is still being written: the transfer was not aborted")
        await server.stop()
    }
}
