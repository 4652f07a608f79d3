import NIOCore
@testable import ServerSupport
import Testing

/// `RequestFraming`: where the bytes read on a connection stand between requests, from the bytes alone.
@Suite struct RequestFramingTests {
    private func framing(_ text: String) -> RequestFraming {
        var framing = RequestFraming()
        framing.consume(ByteBuffer(string: text))
        return framing
    }

    /// Every split of `text` into two reads gives the same position as one read.
    private func expectSplitsAgree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let whole = framing(text)
        let bytes = Array(text.utf8)
        for cut in 0...bytes.count {
            var split = RequestFraming()
            bytes[..<cut].withUnsafeBytes { split.consume($0) }
            bytes[cut...].withUnsafeBytes { split.consume($0) }
            #expect(split == whole, "cut at \(cut)", sourceLocation: sourceLocation)
        }
    }

    @Test func nothingReadIsBetweenRequests() {
        #expect(!RequestFraming().inRequest)
        // Blank lines between requests are skipped, as llhttp skips them.
        #expect(!framing("\r\n\r\n").inRequest)
    }

    @Test func aHeadWithoutBodyEndsAtTheEmptyLine() {
        let done = framing("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(!done.inRequest)
        #expect(done.completed == 1)
        let partial = framing("GET /a HTTP/1.1\r\nHost: x\r\n")
        #expect(partial.inRequest)
        #expect(partial.requestLineEnded)
        #expect(!framing("GET /a HT").requestLineEnded)
        #expect(framing("G").inRequest)
    }

    @Test func bareLineFeedsEndLinesToo() {
        #expect(framing("GET /a HTTP/1.1\nHost: x\n\n").completed == 1)
    }

    @Test func aContentLengthBodyIsFollowed() {
        let head = "POST /u HTTP/1.1\r\ncontent-LENGTH: 5\r\n\r\n"
        #expect(framing(head).position == .body(remaining: 5))
        #expect(framing(head + "abc").position == .body(remaining: 2))
        let done = framing(head + "abcde")
        #expect(done.completed == 1 && !done.inRequest)
        // The next request's first bytes in the same read.
        let next = framing(head + "abcdeGET /b")
        #expect(next.completed == 1 && next.position == .requestLine)
        #expect(framing("POST /u HTTP/1.1\r\nContent-Length : 0\r\nX-Content-Length: 9\r\n\r\n").completed == 1)
    }

    @Test func aChunkedBodyIsFollowedToItsLastChunkAndTrailers() {
        let head = "POST /u HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 3\r\n\r\n"
        #expect(framing(head).position == .chunkSize(0, extensions: false))
        #expect(framing(head + "a;ext=1\r\n0123456789").position == .chunkDataEnd)
        #expect(framing(head + "A\r\n0123456789\r\n0\r\n").position == .trailers)
        #expect(framing(head + "a\r\n0123456789\r\n0\r\nX-Sum: 1\r\n").position == .trailers)
        let done = framing(head + "a\r\n0123456789\r\n0\r\nX-Sum: 1\r\n\r\n")
        #expect(done.completed == 1 && !done.inRequest)
        // `chunked` that is not the last coding does not frame the body: the Content-Length does.
        #expect(framing("POST /u HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 3\r\n\r\n").position == .body(remaining: 3))
    }

    @Test func pipelinedRequestsAreCounted() {
        let three = String(repeating: "GET /a HTTP/1.1\r\n\r\n", count: 3)
        #expect(framing(three).completed == 3)
        #expect(!framing(three).inRequest)
    }

    @Test func aSplitAnywhereGivesTheSamePosition() {
        expectSplitsAgree("GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /c")
        expectSplitsAgree("POST /u HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\nGET /")
    }

    @Test func hugeLengthsDoNotOverflow() {
        #expect(framing("POST /u HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n").inRequest)
        #expect(framing("POST /u HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n").inRequest)
    }
}
