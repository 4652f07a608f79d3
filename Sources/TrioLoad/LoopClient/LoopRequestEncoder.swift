import NIOCore
import Transport

/// Writes a request as HTTP/1.1 bytes, head and body in one buffer (one `write` per request, as wrk sends them).
enum LoopRequestEncoder {
    /// Appends `request` to `buffer`: the request line for `path`, `Host`, the request's fields (a `Content-Length`
    /// of its own left out), `Content-Length` when there is a body or the method carries one, the body.
    /// The fields are checked for line breaks beforehand (``LoopHTTPClient/check(_:)``).
    static func encode(_ request: TransportRequest, path: String, host: String, into buffer: inout ByteBuffer) {
        let body = request.body ?? []
        buffer.reserveCapacity(minimumWritableBytes: 64 + path.utf8.count + host.utf8.count + body.count + request.headers.count * 48)
        buffer.writeString(request.method)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(path)
        buffer.writeStaticString(" HTTP/1.1\r\nHost: ")
        buffer.writeString(host)
        buffer.writeStaticString("\r\n")
        for header in request.headers where !LoopResponseParser.equalsIgnoringCase(header.name, "content-length") {
            buffer.writeString(header.name)
            buffer.writeStaticString(": ")
            buffer.writeString(header.value)
            buffer.writeStaticString("\r\n")
        }
        if !body.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH" {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(body.count))
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
        buffer.writeBytes(body)
    }
}
