import NIOCore

/// Reads one HTTP/1.1 response at a time from a connection's bytes, as they arrive: the head, the body's pieces, the end.
///
/// A value type fed by ``LoopExchangeHandler`` (which keeps the bytes not yet read and performs what ``next(_:)``
/// returns), so every split of a response across reads is testable without a socket. It replaces NIO's client codec
/// for the load tool: that codec ran llhttp and built `HTTPHeaders` and `HTTPResponseHead` for every response, then the
/// tool copied them into ``Transport/TransportResponse`` (16 % of `survey-cli load register`'s CPU).
///
/// Bodies are framed as RFC 9112 §6.3 says: none for a `HEAD` request, a 1xx, 204 or 304 answer; `chunked` when it is
/// the last transfer coding; else `Content-Length`; else until the server closes the connection. Interim 1xx answers
/// (other than 101) are skipped. A head larger than ``maxHeadBytes`` or anything unparsable is `invalid_response`.
struct LoopResponseParser {
    /// What the handler does next.
    enum Step: Equatable {
        /// Every byte given is read; call again when more arrive.
        case needMore
        /// The response's status line and header fields.
        case head(Head)
        /// A piece of the body (decoded from chunks when the body was chunked).
        case body(ByteBuffer)
        /// The response is whole; `keepAlive` when the connection may carry another request.
        case end(keepAlive: Bool)
        /// The bytes are not an HTTP/1.x response (`invalid_response`); the connection cannot be used again.
        case invalid(String)
    }

    /// A response's status line and header fields.
    struct Head: Equatable {
        var status: Int
        var headers: [Header]

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.status == rhs.status && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
        }
    }

    typealias Header = (name: String, value: String)

    private enum State {
        /// Waiting for a response's head; `scanned` bytes of the buffer are known not to end it.
        case head(scanned: Int)
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        /// Between responses (before ``expect(head:)``), or after `invalid`.
        case idle
        case failed
    }

    /// The largest response head read (status line and fields); libcurl's limit is 300 KB, NIO's 80 KB.
    static let maxHeadBytes = 80 * 1024

    private var state = State.idle
    private var requestWasHead = false
    private var keepAlive = true

    /// Starts reading the response to the request just sent (`head` when it was a `HEAD` request: no body follows).
    mutating func expect(head: Bool = false) {
        state = .head(scanned: 0)
        requestWasHead = head
        keepAlive = true
    }

    /// Reads what `buffer` holds: the next step, with the bytes it used taken from `buffer`. Call until `.needMore`.
    mutating func next(_ buffer: inout ByteBuffer) -> Step {
        switch state {
        case .idle, .failed:
            return .needMore
        case .head(let scanned):
            return readHead(&buffer, scanned: scanned)
        case .fixed(let remaining):
            if remaining == 0 { return finish() }
            guard buffer.readableBytes > 0 else { return .needMore }
            let piece = buffer.readSlice(length: min(remaining, buffer.readableBytes))!
            state = .fixed(remaining: remaining - piece.readableBytes)
            return .body(piece)
        case .chunkSize:
            guard let line = readLine(&buffer) else {
                return buffer.readableBytes > 1024 ? fail("a chunk size line longer than 1024 bytes") : .needMore
            }
            guard let size = Self.chunkSize(line) else { return fail("bad chunk size line \"\(String(decoding: line, as: UTF8.self))\"") }
            state = size == 0 ? .trailers : .chunkData(remaining: size)
            return next(&buffer)
        case .chunkData(let remaining):
            guard buffer.readableBytes > 0 else { return .needMore }
            let piece = buffer.readSlice(length: min(remaining, buffer.readableBytes))!
            state = piece.readableBytes == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - piece.readableBytes)
            return .body(piece)
        case .chunkDataEnd:
            guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return .needMore }
            if first == 0x0A {
                buffer.moveReaderIndex(forwardBy: 1)
            } else {
                guard buffer.readableBytes >= 2 else { return .needMore }
                guard buffer.readInteger(as: UInt16.self) == 0x0D0A else { return fail("a chunk not followed by CRLF") }
            }
            state = .chunkSize
            return next(&buffer)
        case .trailers:
            while let line = readLine(&buffer) {
                if line.isEmpty { return finish() }
            }
            return buffer.readableBytes > Self.maxHeadBytes ? fail("trailer fields over \(Self.maxHeadBytes) bytes") : .needMore
        case .untilClose:
            guard buffer.readableBytes > 0 else { return .needMore }
            return .body(buffer.readSlice(length: buffer.readableBytes)!)
        }
    }

    /// The connection closed: `.end` for a body that runs until the close, `.invalid` inside any other response,
    /// `.needMore` (nothing to report) between responses.
    mutating func closed() -> Step {
        switch state {
        case .untilClose:
            keepAlive = false
            return finish()
        case .idle, .failed:
            return .needMore
        case .head(let scanned) where scanned == 0:
            state = .idle
            return .needMore
        default:
            return fail("the connection closed inside the response")
        }
    }

    /// True when some of the awaited response has been read (its head, or part of it, or bytes that were no response).
    var hasBegun: Bool {
        switch state {
        case .head(let scanned): return scanned > 0
        case .idle: return false
        case .failed: return true
        default: return true
        }
    }

    private mutating func finish() -> Step {
        state = .idle
        return .end(keepAlive: keepAlive)
    }

    private mutating func fail(_ message: String) -> Step {
        state = .failed
        return .invalid(message)
    }

    private mutating func readHead(_ buffer: inout ByteBuffer, scanned: Int) -> Step {
        let readable = buffer.readableBytes
        // The blank line that ends the head: CRLF CRLF, or bare LFs (accepted, as llhttp does).
        let found: (end: Int, length: Int)? = buffer.withUnsafeReadableBytes { bytes in
            var index = max(0, scanned - 3)
            while index < bytes.count {
                if bytes[index] == 0x0A {
                    if index + 1 < bytes.count, bytes[index + 1] == 0x0A { return (index + 1, 1) }
                    if index + 2 < bytes.count, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A { return (index + 1, 2) }
                }
                index += 1
            }
            return nil
        }
        guard let (end, terminator) = found else {
            if readable > Self.maxHeadBytes { return fail("a response head over \(Self.maxHeadBytes) bytes") }
            state = .head(scanned: readable)
            return .needMore
        }
        let parsed = buffer.withUnsafeReadableBytes { Self.parseHead(UnsafeRawBufferPointer(rebasing: $0[..<end])) }
        buffer.moveReaderIndex(forwardBy: end + terminator)
        guard case .success(let (head, version11, framing)) = parsed else {
            if case .failure(let failure) = parsed { return fail(failure.message) }
            return fail("unreadable head")
        }
        if (100..<200).contains(head.status), head.status != 101 {
            state = .head(scanned: 0)
            return next(&buffer)
        }
        let connection = head.headers.last { Self.equalsIgnoringCase($0.name, "connection") }?.value.lowercased()
        keepAlive = version11 ? !(connection?.contains("close") ?? false) : (connection?.contains("keep-alive") ?? false)
        if requestWasHead || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
            state = .fixed(remaining: 0)
        } else {
            switch framing {
            case .chunked: state = .chunkSize
            case .length(let length): state = .fixed(remaining: length)
            case .untilClose:
                keepAlive = false
                state = .untilClose
            }
        }
        return .head(head)
    }

    private enum Framing { case chunked, length(Int), untilClose }

    private struct Failure: Error { var message: String }

    private static func parseHead(_ bytes: UnsafeRawBufferPointer) -> Result<(Head, Bool, Framing), Failure> {
        var lines = Lines(bytes: bytes)
        guard let statusLine = lines.next(), statusLine.count >= 12,
              statusLine.starts(with: "HTTP/1.".utf8), statusLine[statusLine.startIndex + 8] == 0x20,
              statusLine.count == 12 || statusLine[statusLine.startIndex + 12] == 0x20,
              let status = threeDigits(statusLine[(statusLine.startIndex + 9)..<(statusLine.startIndex + 12)]) else {
            let shown = String(decoding: bytes.prefix(60), as: UTF8.self)
            return .failure(Failure(message: "not an HTTP/1.x status line: \"\(shown)\""))
        }
        let version11 = statusLine[statusLine.startIndex + 7] != UInt8(ascii: "0")
        var headers: [Header] = []
        var framing = Framing.untilClose
        var length: Int?
        var transferEncoded = false
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                return .failure(Failure(message: "a header line without a name: \"\(String(decoding: line.prefix(60), as: UTF8.self))\""))
            }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let valueBytes = trimSpace(line[(colon + 1)...])
            let value = String(decoding: valueBytes, as: UTF8.self)
            if equalsIgnoringCase(name, "content-length") {
                guard let parsed = Int(value), parsed >= 0, length == nil || length == parsed else {
                    return .failure(Failure(message: "bad Content-Length \"\(value)\""))
                }
                length = parsed
            } else if equalsIgnoringCase(name, "transfer-encoding") {
                transferEncoded = true
                let lastCoding = trimSpace(valueBytes[((valueBytes.lastIndex(of: UInt8(ascii: ",")) ?? valueBytes.startIndex - 1) + 1)...])
                framing = equalsIgnoringCase(String(decoding: lastCoding, as: UTF8.self), "chunked") ? .chunked : .untilClose
            }
            headers.append((name: name, value: value))
        }
        if !transferEncoded, let length { framing = .length(length) }
        return .success((Head(status: status, headers: headers), version11, framing))
    }

    /// The lines of a head, each without its CRLF (or LF).
    private struct Lines {
        let bytes: UnsafeRawBufferPointer
        var start = 0

        mutating func next() -> Slice<UnsafeRawBufferPointer>? {
            guard start < bytes.count else { return nil }
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            var line = bytes[start..<end]
            start = end + 1
            if line.last == 0x0D { line = line.dropLast() }
            return line
        }
    }

    private static func trimSpace(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    private static func threeDigits(_ bytes: Slice<UnsafeRawBufferPointer>) -> Int? {
        var value = 0
        for byte in bytes {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// ASCII case-insensitive comparison with a lowercase `lower`, without building a lowercased copy.
    static func equalsIgnoringCase(_ name: String, _ lower: StaticString) -> Bool {
        let other = UnsafeRawBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount)
        var index = 0
        for byte in name.utf8 {
            guard index < other.count else { return false }
            let folded = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
            guard folded == other[index] else { return false }
            index += 1
        }
        return index == other.count
    }

    /// A line ending in CRLF (or LF), without its ending; nil until one has arrived.
    private func readLine(_ buffer: inout ByteBuffer) -> [UInt8]? {
        guard let newline = buffer.readableBytesView.firstIndex(of: 0x0A) else { return nil }
        let length = newline - buffer.readerIndex
        var line = buffer.readBytes(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if line.last == 0x0D { line.removeLast() }
        return line
    }

    /// The hexadecimal size at the start of a chunk line (extensions after `;` ignored); nil when it is not one.
    private static func chunkSize(_ line: [UInt8]) -> Int? {
        var size = 0
        var digits = 0
        for byte in line {
            let digit: Int
            switch byte {
            case 0x30...0x39: digit = Int(byte - 0x30)
            case 0x41...0x46: digit = Int(byte - 0x41 + 10)
            case 0x61...0x66: digit = Int(byte - 0x61 + 10)
            case 0x3B, 0x20, 0x09: return digits > 0 ? size : nil
            default: return nil
            }
            guard digits < 15 else { return nil }
            size = size * 16 + digit
            digits += 1
        }
        return digits > 0 ? size : nil
    }
}
