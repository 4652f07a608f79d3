import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A real Hummingbird server on 127.0.0.1 port 0 for transport tests.
final class TestServer: Sendable {
    let url: String
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    /// How many /slow requests the client abandoned (its connection closed before the answer).
    let abandoned: Counter

    var abandonedCount: Int { abandoned.value.withLock { $0 } }
    /// `/forever` streams that ended (the client went away).
    let endedStreams: Counter
    var endedStreamCount: Int { endedStreams.value.withLock { $0 } }

    final class Counter: Sendable { let value = Mutex(0) }

    private init(url: String, group: ServiceGroup, task: Task<Void, any Error>, abandoned: Counter, endedStreams: Counter) {
        self.endedStreams = endedStreams
        self.url = url
        self.group = group
        self.task = task
        self.abandoned = abandoned
    }

    static func start() async throws -> TestServer {
        let router = Router()
        router.get("/hello") { _, _ in "hello" }
        router.post("/echo") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 24)
            var headers: HTTPFields = [.contentType: request.headers[.contentType] ?? "none"]
            headers[HTTPField.Name("X-Method")!] = request.method.rawValue
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
        }
        router.put("/echo") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 24)
            return Response(status: .ok, headers: [HTTPField.Name("X-Method")!: request.method.rawValue], body: .init(byteBuffer: body))
        }
        router.get("/status/{code}") { _, context -> Response in
            Response(status: .init(code: Int(try context.parameters.require("code"))!))
        }
        let abandoned = Counter()
        router.get("/slow") { request, _ -> String in
            let ms = Int(request.uri.queryParameters["ms"].map(String.init) ?? "100") ?? 100
            do {
                // Ends early when the client closes the connection, and counts it.
                return try await request.body.consumeWithCancellationOnInboundClose { _ in
                    try await Task.sleep(for: .milliseconds(ms))
                    return "slept \(ms)"
                }
            } catch is CancellationError {
                abandoned.value.withLock { $0 += 1 }
                throw CancellationError()
            }
        }
        // Answers after a while, keeping the connection (`/slow` watches for the client leaving, which ends it).
        router.get("/delay") { request, _ -> String in
            let ms = Int(request.uri.queryParameters["ms"].map(String.init) ?? "100") ?? 100
            try await Task.sleep(for: .milliseconds(ms))
            return "slept \(ms)"
        }
        router.get("/events") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/event-stream"], body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: ": hello\n\n"))
                for i in 1...3 {
                    try await Task.sleep(for: .milliseconds(20))
                    try await writer.write(ByteBuffer(string: "id: \(i)\nevent: tick\ndata: {\"n\": \(i)}\n\n"))
                }
                try await writer.finish(nil)
            })
        }
        let endedStreams = Counter()
        router.get("/forever") { request, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/event-stream"], body: ResponseBody { writer in
                defer { endedStreams.value.withLock { $0 += 1 } }
                try await request.body.consumeWithCancellationOnInboundClose { _ in
                    while true {
                        try await writer.write(ByteBuffer(string: ": tick\n\n"))
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
            })
        }
        let port = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test-server")
        logger.logLevel = .error
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in port.continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await group.run() }
        var iterator = port.stream.makeAsyncIterator()
        let bound = await iterator.next() ?? 0
        return TestServer(url: "http://127.0.0.1:\(bound)", group: group, task: task, abandoned: abandoned, endedStreams: endedStreams)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
