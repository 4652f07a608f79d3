import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SurveyWire
import Testing
import TrioTesting

extension Integration {
/// The servers' own HTTP/1 connection handling (`BufferedHTTPChannel`, with the relay's `RelayConnection` in front),
/// byte for byte over a plain socket: keep-alive, pipelining, `Connection: close`, bad requests, oversized bodies, and
/// event streams opened, replaced and left.
@Suite(.timeLimit(.minutes(2))) struct RelayConnectionTests {
    @Test func keepAliveAndPipelinedRequestsAreAnsweredInOrder() async throws {
        try await Trio.with { trio in
            let socket = try RawSocket(trio.relay.url)
            try socket.send("GET /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let first = try socket.readResponse()
            #expect(first.status == 200)
            #expect(first.headers["content-length"] == String(first.body.utf8.count))
            #expect(first.body.contains("\"ok\""))
            // Two requests in one write: both answered, in order, on the same connection.
            try socket.send("GET /__control/devices/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let second = try socket.readResponse()
            let third = try socket.readResponse()
            #expect(second.status == 404)
            #expect(third.status == 200)
        }
    }

    /// Both servers answer through the same connection handler: every response names the server, carries an
    /// IMF-fixdate `Date` and its body's length, and a form posted in two writes with another request pipelined
    /// behind it is answered in order.
    @Test func bothServersAnswerWithServerDateAndLength() async throws {
        try await Trio.with { trio in
            let dateFormat = DateFormatter()
            dateFormat.locale = Locale(identifier: "en_US_POSIX")
            dateFormat.timeZone = TimeZone(identifier: "GMT")
            dateFormat.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            func check(_ response: RawSocket.Response, server: String) throws {
                #expect(response.headers["server"] == server)
                #expect(response.headers["content-length"] == String(response.body.utf8.count))
                let date = try #require(response.headers["date"].flatMap { dateFormat.date(from: $0) }, "no IMF-fixdate Date header")
                #expect(abs(date.timeIntervalSinceNow) < 60)
            }
            let relay = try RawSocket(trio.relay.url)
            try relay.send("GET /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            try check(try relay.readResponse(), server: "push-relay")
            let socket = try RawSocket(trio.server.url)
            let form = "patient_id=nobody1&password=x&device_id=d"
            try socket.send("POST /register_user HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                            + "Content-Length: \(form.utf8.count)\r\n\r\n" + form.prefix(10))
            try await Task.sleep(for: .milliseconds(50))
            try socket.send(String(form.dropFirst(10)) + "GET /__admin/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let refused = try socket.readResponse()
            #expect(refused.status == 403)
            #expect(refused.body.contains("invalid_credentials"))
            try check(refused, server: "mock-server")
            let health = try socket.readResponse()
            #expect(health.status == 200)
            try check(health, server: "mock-server")
        }
    }

    @Test func connectionCloseAndHTTP10AreHonoured() async throws {
        try await Trio.with { trio in
            let socket = try RawSocket(trio.relay.url)
            try socket.send("GET /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            let response = try socket.readResponse()
            #expect(response.status == 200)
            #expect(response.headers["connection"] == "close")
            #expect(try socket.readToEnd().isEmpty)

            let old = try RawSocket(trio.relay.url)
            try old.send("GET /__control/health HTTP/1.0\r\n\r\n")
            #expect(try old.readResponse().status == 200)
            #expect(try old.readToEnd().isEmpty)
        }
    }

    @Test func badRequestsGetClearErrorsAndTheRelayGoesOn() async throws {
        try await Trio.with { trio in
            // Not HTTP at all: NIO's parser fails, the relay answers 400 and closes.
            let garbage = try RawSocket(trio.relay.url)
            try garbage.send("HELLO THERE\r\n\r\n")
            #expect(try garbage.readResponse().status == 400)
            #expect(try garbage.readToEnd().isEmpty)

            // A body far past the limit (3 MiB, limit 1 MiB): 413 from the route, and only the limit is kept meanwhile.
            let token = try await trio.control.registerDevice(platform: "android")
            let big = try RawSocket(trio.relay.url)
            let size = 3 << 20
            try big.send("POST /v1/devices/\(token)/ack HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(size)\r\n\r\n")
            try big.send(String(repeating: " ", count: size))
            let refused = try big.readResponse()
            #expect(refused.status == 413)
            #expect(refused.body.contains("payload_too_large"), "\(refused)")
            // The same connection still serves the next request.
            try big.send("GET /__control/devices/\(token) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try big.readResponse().status == 200)
            // A client that asks before sending its body is told to go on.
            try big.send("POST /v1/devices/\(token)/ack HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
            #expect(try big.readHead().status == 100)
            try big.send(#"{"ids":[]}"#)
            #expect(try big.readResponse().status == 204)
            // Past the limit on the APNs API: Apple's own reason.
            let ios = try await trio.control.registerDevice(platform: "ios")
            try big.send("POST /3/device/\(ios) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(size)\r\n\r\n")
            try big.send(String(repeating: " ", count: size))
            let apns = try big.readResponse()
            #expect(apns.status == 413)
            #expect(apns.body.contains("PayloadTooLarge"), "\(apns)")

            // A method NIO knows but the router does not route, and an unknown path.
            let other = try RawSocket(trio.relay.url)
            try other.send("PATCH /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try other.readResponse().status >= 400)
            try other.send("GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try other.readResponse().status == 404)
            #expect(try await trio.control.health())
        }
    }

    @Test func streamsAreRefusedReplacedAndLeft() async throws {
        try await Trio.with { trio in
            // Unknown token: a JSON error, then the connection closes.
            let unknown = try RawSocket(trio.relay.url)
            try unknown.send("GET /v1/devices/nope/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let refused = try unknown.readResponse()
            #expect(refused.status == 404)
            #expect(refused.body.contains("unknown_token"))
            #expect(try unknown.readToEnd().isEmpty)

            let token = try await trio.control.registerDevice(platform: "ios")
            let first = try RawSocket(trio.relay.url)
            try first.send("GET /v1/devices/\(token)/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            let head = try first.readHead()
            #expect(head.status == 200)
            #expect(head.headers["content-type"] == "text/event-stream")
            #expect(head.headers["transfer-encoding"] == "chunked")
            #expect(try first.readUntil(": connected\n\n").contains(": connected"))
            #expect(try await eventually { try await trio.control.device(token).connected })

            // A push reaches the open stream.
            let sent = try await trio.control.sendAPNs(token: token, payload: ["aps": ["alert": "hi"], "n": "1"])
            #expect(sent.status == 200)
            let event = try first.readUntil("\n\n")
            #expect(event.contains("event: push"))
            #expect(event.contains("\"n\":\"1\""))

            // A second stream for the same token replaces the first: the first ends (last chunk, then the close).
            let second = try RawSocket(trio.relay.url)
            try second.send("GET /v1/devices/\(token)/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try second.readHead().status == 200)
            #expect(try first.readToEnd().contains("0\r\n\r\n"))
            // The unacked push is sent again on the new stream.
            #expect(try second.readUntil("event: push").contains("event: push"))

            // The client leaves: the relay notices without writing anything.
            second.close()
            #expect(try await eventually { try await trio.control.device(token).connected == false })
        }
    }

    @Test func aStreamThatIsNotReadIsClosedAndWhatItMissedComesAgain() async throws {
        try await Trio.with { trio in
            let token = try await trio.control.registerDevice(platform: "android")
            // A small receive window, and nothing ever read.
            let stuck = try RawSocket(trio.relay.url, receiveBuffer: 4096)
            try stuck.send("GET /v1/devices/\(token)/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try await eventually { try await trio.control.device(token).connected })
            var sent = 0
            while sent < 400, try await trio.control.device(token).connected {
                for _ in 0..<10 {
                    let data = ["blob": String(repeating: "x", count: 3000), "n": String(sent)]
                    #expect(try await trio.control.sendFCM(token: token, data: data).status == 200)
                    sent += 1
                }
            }
            #expect(try await eventually { try await trio.control.device(token).connected == false })
            #expect(sent < 400, "the relay kept buffering for a client that reads nothing")
            // A reader that does read gets the first unacked push again.
            let reader = try RawSocket(trio.relay.url)
            try reader.send("GET /v1/devices/\(token)/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try reader.readHead().status == 200)
            #expect(try reader.readUntil("\n\n").contains(": connected"))
            let first = try reader.readUntil("\n\n")
            #expect(first.contains("event: push") && first.contains(#""n":"0""#), "\(first.prefix(200))")
        }
    }
}
}

/// A blocking TCP socket speaking raw HTTP/1.1, for checking the relay's connection handling byte for byte.
final class RawSocket {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
        /// The interim (1xx) answers that came before it.
        var interims: [Int] = []
    }

    private let fd: Int32
    private var pending: [UInt8] = []

    init(_ url: String, receiveBuffer: Int32? = nil) throws {
        let parts = try #require(URL(string: url))
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(try #require(parts.port)).bigEndian)
        inet_pton(AF_INET, parts.host ?? "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0, "connect failed: errno \(errno)")
    }

    deinit { close() }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Closes with a reset (SO_LINGER 0), as a client that gave up and dropped its connection is seen by the server
    /// at once; a plain close is an end of input, which the server cannot tell from a half-close.
    func abort() {
        guard !closed else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Closes the sending side (the peer reads end-of-stream; this socket can still read the answer).
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    func send(_ text: String) throws {
        try send(bytes: Array(text.utf8))
    }

    func send(bytes: [UInt8]) throws {
        var bytes = bytes[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EPIPE { return }  // the peer already answered and closed (a refused body)
            try #require(n > 0, "send failed: errno \(errno)")
            bytes = bytes.dropFirst(n)
        }
    }

    /// Reads more bytes; false at the end of the stream.
    private func fill() throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        try #require(n >= 0, "recv failed or timed out: errno \(errno)")
        pending += buffer[..<n]
        return n > 0
    }

    private func take(upTo marker: [UInt8]) throws -> [UInt8]? {
        while true {
            if let range = pending.firstRange(of: marker) {
                let taken = Array(pending[..<range.upperBound])
                pending.removeFirst(range.upperBound)
                return taken
            }
            guard try fill() else { return nil }
        }
    }

    /// Status line and headers (names lowercased).
    func readHead() throws -> (status: Int, headers: [String: String]) {
        let raw = try #require(try take(upTo: Array("\r\n\r\n".utf8)), "the connection closed before a response")
        let lines = String(decoding: raw, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    /// A whole response with a Content-Length body. Interim (1xx) answers are skipped, as RFC 9110 asks of every client,
    /// and listed in ``Response/interims`` (ours sends one only to a request that asked, `Expect: 100-continue`).
    func readResponse() throws -> Response {
        var (status, headers) = try readHead()
        var interims: [Int] = []
        while (100..<200).contains(status) && status != 101 {
            interims.append(status)
            (status, headers) = try readHead()
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while pending.count < length { guard try fill() else { break } }
        let body = String(decoding: pending.prefix(length), as: UTF8.self)
        pending.removeFirst(min(length, pending.count))
        return Response(status: status, headers: headers, body: body, interims: interims)
    }

    /// Text up to and including `marker` (chunk framing included).
    func readUntil(_ marker: String) throws -> String {
        String(decoding: try #require(try take(upTo: Array(marker.utf8)), "the connection closed before \"\(marker)\""), as: UTF8.self)
    }

    /// Everything until the peer closes.
    func readToEnd() throws -> String {
        while try fill() {}
        defer { pending = [] }
        return String(decoding: pending, as: UTF8.self)
    }
}
