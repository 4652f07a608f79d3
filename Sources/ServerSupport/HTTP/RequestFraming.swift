import NIOCore

/// Where a connection's incoming bytes stand relative to HTTP/1 request boundaries, worked out from the bytes alone.
///
/// NIO's decoder reports a request's head once its headers are complete and its end once its body is, but nothing
/// for the first bytes of a request whose head is not complete yet: after `GET /a` and the first half of `GET /b` in
/// one packet, the decoder has said "`/a` ended" and nothing more. The connection's deadlines need to know that `/b`
/// has begun (its request deadline runs, not the idle one), so this follows the framing itself: the request line and
/// headers up to the empty line, then a `Content-Length` body or a chunked one. It reads only what framing needs
/// (those two headers' values), accepts a bare LF as a line end as llhttp does, and skips blank lines between
/// requests. Where it and the decoder could disagree (input the decoder refuses), the decoder's error closes the
/// connection anyway.
struct RequestFraming: Equatable {
    enum Position: Equatable {
        /// Between requests: no byte of the next one yet.
        case between
        /// In the request line.
        case requestLine
        /// In the header lines.
        case headers
        /// In a `Content-Length` body: bytes still to come.
        case body(remaining: Int)
        /// In a chunk-size line (the size so far; extensions after `;` are skipped).
        case chunkSize(Int, extensions: Bool)
        /// In a chunk's data: bytes still to come, then its line end.
        case chunkData(remaining: Int)
        /// After a chunk's data, up to its line end.
        case chunkDataEnd
        /// In the trailer lines after the last chunk.
        case trailers
    }

    private(set) var position = Position.between
    /// Requests whose last byte has been seen.
    private(set) var completed = 0

    // The header line being read: its length so far, how far its name matches each framing header, and the framing
    // the headers so far declare.
    private var lineLength = 0
    private var nameMatch = NameMatch.start
    private var contentLength = 0
    private var chunked = false
    /// The last seven bytes of the current `Transfer-Encoding` value (spaces left out), lowercased.
    private var codingTail: UInt64 = 0

    /// Whether a request has begun and not ended.
    var inRequest: Bool { position != .between }

    /// Whether the current request's first line has ended (a header block too large is then 431, not 414).
    var requestLineEnded: Bool { position != .between && position != .requestLine }

    /// Follows `bytes`, the next bytes read on the connection.
    mutating func consume(_ bytes: ByteBuffer) {
        bytes.withUnsafeReadableBytes { consume($0) }
    }

    /// Follows `bytes`, the next bytes read on the connection.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        let count = bytes.count
        while index < count {
            switch position {
            case .body(let remaining):
                let taken = min(remaining, count - index)
                index += taken
                if taken == remaining { finishRequest() } else { position = .body(remaining: remaining - taken) }
            case .chunkData(let remaining):
                let taken = min(remaining, count - index)
                index += taken
                position = taken == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - taken)
            default:
                step(bytes[index])
                index += 1
            }
        }
    }

    private mutating func step(_ byte: UInt8) {
        let lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        switch position {
        case .between:
            if byte == lf || byte == cr { return }
            position = .requestLine
        case .requestLine:
            if byte == lf { startLine(); position = .headers }
        case .headers:
            if byte == lf {
                if lineLength == 0 { endHead() } else { startLine() }
            } else if byte != cr {
                headerByte(byte)
            }
        case .chunkSize(let size, let extensions):
            if byte == lf {
                if size == 0 { startLine(); position = .trailers } else { position = .chunkData(remaining: size) }
            } else if !extensions, let digit = Self.hexValue(byte) {
                position = .chunkSize(size > (Int.max >> 5) ? Int.max >> 1 : size << 4 | digit, extensions: false)
            } else if byte != cr {
                position = .chunkSize(size, extensions: true)
            }
        case .chunkDataEnd:
            if byte == lf { position = .chunkSize(0, extensions: false) }
        case .trailers:
            if byte == lf {
                if lineLength == 0 { finishRequest() } else { startLine() }
            } else if byte != cr {
                lineLength += 1
            }
        case .body, .chunkData:
            break
        }
    }

    // MARK: Headers

    /// How a header line's name compares with the two that frame a body.
    private enum NameMatch: Equatable {
        case start
        /// The first `count` bytes match `Content-Length`, `Transfer-Encoding` or both.
        case prefix(count: Int, contentLength: Bool, transferEncoding: Bool)
        case contentLengthValue
        case transferEncodingValue
        /// Some other header, or past its name.
        case other
    }

    private static let contentLengthName = Array("content-length".utf8)
    private static let transferEncodingName = Array("transfer-encoding".utf8)
    private static let chunkedTail = "chunked".utf8.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }

    private mutating func startLine() {
        lineLength = 0
        nameMatch = .start
    }

    private mutating func headerByte(_ byte: UInt8) {
        lineLength += 1
        let lower = byte | 0x20
        switch nameMatch {
        case .start:
            nameMatch = .prefix(count: 0, contentLength: true, transferEncoding: true)
            headerByte(byte, lower: lower)
        case .prefix:
            headerByte(byte, lower: lower)
        case .contentLengthValue:
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                contentLength = contentLength > Int.max / 20 ? Int.max / 2 : contentLength * 10 + Int(byte - UInt8(ascii: "0"))
            }
        case .transferEncodingValue:
            // The value's last seven bytes other than spaces and tabs, as one number: `chunked` must be the last coding.
            if byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") {
                codingTail = (codingTail << 8 | UInt64(lower)) & 0x00FF_FFFF_FFFF_FFFF
                chunked = codingTail == Self.chunkedTail
            }
        case .other:
            break
        }
    }

    /// A byte of a header line's name (or its colon).
    private mutating func headerByte(_ byte: UInt8, lower: UInt8) {
        guard case .prefix(let count, var contentLength, var transferEncoding) = nameMatch else { return }
        if byte == UInt8(ascii: ":") {
            if contentLength && count == Self.contentLengthName.count {
                nameMatch = .contentLengthValue
                self.contentLength = 0
            } else if transferEncoding && count == Self.transferEncodingName.count {
                nameMatch = .transferEncodingValue
                codingTail = 0
            } else {
                nameMatch = .other
            }
            return
        }
        contentLength = contentLength && count < Self.contentLengthName.count && Self.contentLengthName[count] == lower
        transferEncoding = transferEncoding && count < Self.transferEncodingName.count && Self.transferEncodingName[count] == lower
        nameMatch = contentLength || transferEncoding ? .prefix(count: count + 1, contentLength: contentLength, transferEncoding: transferEncoding)
                                                      : .other
    }

    /// The empty line after the headers: the body (if any) follows.
    private mutating func endHead() {
        if chunked {
            position = .chunkSize(0, extensions: false)
        } else if contentLength > 0 {
            position = .body(remaining: contentLength)
        } else {
            finishRequest()
        }
    }

    private mutating func finishRequest() {
        completed += 1
        position = .between
        contentLength = 0
        chunked = false
        codingTail = 0
        startLine()
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}
