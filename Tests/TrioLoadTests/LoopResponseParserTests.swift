import NIOCore
import Testing
import Transport
@testable import TrioLoad

/// The load client's HTTP/1.1 response reader, fed bytes as a socket would: whole, one byte at a time, split anywhere.
@Suite struct LoopResponseParserTests {
    /// What a response read to its end gives: the head, the body's bytes joined, and the end.
    struct Read: Equatable {
        var head: LoopResponseParser.Head?
        var body: [UInt8] = []
        var keepAlive: Bool?
        var invalid: String?
        var left: [UInt8] = []
    }

    /// Feeds `text` in pieces of the given sizes (the rest in one), then `closed()` when `close` is true.
    func read(_ text: String, pieces: [Int] = [], head: Bool = false, close: Bool = false) -> Read {
        var parser = LoopResponseParser()
        parser.expect(head: head)
        var result = Read()
        var bytes = Array(text.utf8)[...]
        var buffer = ByteBuffer()
        var sizes = pieces[...]
        func apply(_ step: LoopResponseParser.Step) -> Bool {
            switch step {
            case .needMore: return false
            case .head(let head): result.head = head
            case .body(let piece): result.body += Array(piece.readableBytesView)
            case .end(let keepAlive): result.keepAlive = keepAlive
            case .invalid(let message): result.invalid = message
            }
            return true
        }
        while !bytes.isEmpty, result.keepAlive == nil, result.invalid == nil {
            let size = sizes.popFirst() ?? bytes.count
            buffer.writeBytes(bytes.prefix(size))
            bytes = bytes.dropFirst(size)
            while result.keepAlive == nil, result.invalid == nil, apply(parser.next(&buffer)) {}
        }
        if close, result.keepAlive == nil, result.invalid == nil { _ = apply(parser.closed()) }
        result.left = Array(buffer.readableBytesView) + Array(bytes)
        return result
    }

    func head(_ status: Int, _ headers: [(String, String)]) -> LoopResponseParser.Head {
        LoopResponseParser.Head(status: status, headers: headers.map { (name: $0.0, value: $0.1) })
    }

    static let sized = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"
    static let chunked = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: 1\r\n\r\n"
    /// The same with bare line feeds, which llhttp (and so NIO's codec) accepted.
    static let bareLF = "HTTP/1.1 201 Created\nTransfer-Encoding: chunked\n\n5\nhello\n1;ext=1\n \n5\nworld\n0\nX-Trailer: 1\n\n"

    @Test func aSizedResponseReadsWhole() {
        let result = read(Self.sized)
        #expect(result.head == head(200, [("Content-Type", "application/json"), ("Content-Length", "11")]))
        #expect(String(decoding: result.body, as: UTF8.self) == "{\"ok\":true}")
        #expect(result.keepAlive == true)
        #expect(result.left.isEmpty)
    }

    @Test func everySplitOfASizedOrChunkedResponseReadsTheSame() {
        for text in [Self.sized, Self.chunked, Self.bareLF] {
            let whole = read(text)
            #expect(whole.invalid == nil)
            for split in 1..<text.utf8.count {
                #expect(read(text, pieces: [split]) == whole, "split at \(split)")
            }
            #expect(read(text, pieces: Array(repeating: 1, count: text.utf8.count)) == whole, "one byte at a time")
        }
    }

    @Test func chunksAreJoinedAndTrailersSkipped() {
        let result = read(Self.chunked)
        #expect(result.head?.status == 201)
        #expect(String(decoding: result.body, as: UTF8.self) == "hello world")
        #expect(result.keepAlive == true)
        #expect(result.left.isEmpty)
    }

    @Test func bareLineFeedsReadAsCRLF() {
        #expect(read(Self.bareLF) == read(Self.chunked))
        let mixed = read("HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok")
        #expect(mixed.head?.status == 200 && mixed.body == Array("ok".utf8) && mixed.keepAlive == true)
    }

    @Test func connectionCloseAndHTTP10DecideWhetherTheConnectionIsKept() {
        #expect(read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").keepAlive == false)
        #expect(read("HTTP/1.1 200 OK\r\nconnection: Close\r\ncontent-length: 0\r\n\r\n").keepAlive == false)
        #expect(read("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keepAlive == false)
        #expect(read("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").keepAlive == true)
    }

    @Test func aBodyWithoutLengthRunsUntilTheServerCloses() {
        let open = read("HTTP/1.1 200 OK\r\n\r\nsome bytes")
        #expect(open.keepAlive == nil && open.body == Array("some bytes".utf8))
        let closed = read("HTTP/1.1 200 OK\r\n\r\nsome bytes", close: true)
        #expect(closed.keepAlive == false && closed.body == Array("some bytes".utf8))
    }

    @Test func noBodyForHeadRequestsOr204Or304() {
        let headRequest = read("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", head: true)
        #expect(headRequest.keepAlive == true && headRequest.body.isEmpty)
        #expect(read("HTTP/1.1 204 No Content\r\n\r\n").keepAlive == true)
        #expect(read("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n").keepAlive == true)
    }

    @Test func interimResponsesAreSkipped() {
        let result = read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + Self.sized)
        #expect(result.head?.status == 200)
        #expect(result.body == Array("{\"ok\":true}".utf8))
    }

    @Test func transferEncodingOverridesContentLength() {
        let result = read("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
        #expect(result.body == Array("hi".utf8) && result.keepAlive == true)
    }

    @Test func bytesAfterTheResponseAreLeftUnread() {
        #expect(read(Self.sized + "HTTP/1.1").left == Array("HTTP/1.1".utf8))
    }

    @Test func malformedResponsesAreInvalid() {
        #expect(read("SSH-2.0-OpenSSH_9.2\r\n\r\n").invalid?.hasPrefix("not an HTTP/1.x status line") == true)
        #expect(read("HTTP/1.1 2x0 OK\r\n\r\n").invalid != nil)
        #expect(read("HTTP/1.1 200OK\r\n\r\n").invalid != nil)
        #expect(read("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n").invalid?.hasPrefix("a header line without a name") == true)
        #expect(read("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n").invalid != nil)
        #expect(read("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n").invalid == "bad Content-Length \"-1\"")
        #expect(read("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n").invalid != nil)
        #expect(read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").invalid?.hasPrefix("bad chunk size") == true)
        #expect(read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX").invalid == "a chunk not followed by CRLF")
        let huge = "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: LoopResponseParser.maxHeadBytes)
        #expect(read(huge).invalid?.hasPrefix("a response head over") == true)
    }

    @Test func aCloseInsideAResponseIsInvalidAndBeforeItIsNothing() {
        #expect(read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", close: true).invalid == "the connection closed inside the response")
        #expect(read("HTTP/1.1 20", close: true).invalid == "the connection closed inside the response")
        var parser = LoopResponseParser()
        parser.expect()
        #expect(!parser.hasBegun)
        #expect(parser.closed() == .needMore)
        #expect(!parser.hasBegun)
    }

    @Test func hasBegunOnceAByteOfTheAnswerArrived() {
        var parser = LoopResponseParser()
        parser.expect()
        var buffer = ByteBuffer()
        #expect(parser.next(&buffer) == .needMore)
        #expect(!parser.hasBegun)
        buffer.writeString("H")
        #expect(parser.next(&buffer) == .needMore)
        #expect(parser.hasBegun)
    }

    @Test func theEncoderWritesOneRequestTheParserCanFrame() {
        var buffer = ByteBuffer()
        let request = TransportRequest(method: "POST", url: "http://127.0.0.1:1/register_user",
                                       headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "999")],
                                       body: Array("a=1".utf8))
        LoopRequestEncoder.encode(request, path: "/register_user", host: "127.0.0.1:1", into: &buffer)
        #expect(String(buffer: buffer) == "POST /register_user HTTP/1.1\r\nHost: 127.0.0.1:1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1")
        var get = ByteBuffer()
        LoopRequestEncoder.encode(TransportRequest(method: "GET", url: "http://h/x"), path: "/x", host: "h", into: &get)
        #expect(String(buffer: get) == "GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
    }
}
