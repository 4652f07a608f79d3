import CCurl
import Synchronization

/// One transfer's state. Created by the caller, then owned by the driver thread: after
/// ``CurlDriver/submit(_:)`` only the driver thread touches the easy handle and buffers.
///
/// `@unchecked Sendable` is safe because ownership moves to the driver thread exactly once (through the
/// driver's mutex-protected queue) and the completion sinks it calls are themselves thread-safe.
final class CurlTransfer: @unchecked Sendable {
    enum Sink {
        /// Buffered: the whole response at the end.
        case buffered(@Sendable (Result<TransportResponse, TransportError>) -> Void)
        /// Streaming: the head once known, then chunks, then the end.
        case streaming(head: @Sendable (Result<(Int, [(name: String, value: String)]), TransportError>) -> Void,
                       chunk: @Sendable ([UInt8]) -> Void,
                       end: @Sendable (TransportError?) -> Void)
    }

    let id: UInt64
    let request: TransportRequest
    let sink: Sink
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var status = 0
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    var headDelivered = false
    var newConnections = 0
    var finished = false

    init(id: UInt64, request: TransportRequest, sink: Sink) {
        self.id = id
        self.request = request
        self.sink = sink
    }

    /// Builds the easy handle. Runs on the driver thread.
    func prepare(defaultTimeout: Duration?, connectTimeout: Duration) -> TransportError? {
        guard let easy = curl_easy_init() else { return TransportError(code: "curl_init", message: "curl_easy_init failed") }
        self.easy = easy
        let me = Unmanaged.passUnretained(self).toOpaque()
        ccurl_easy_setopt_string(easy, CURLOPT_URL, request.url)
        ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        ccurl_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1)
        ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        if let local = request.localAddress {
            // "host!" makes curl bind to this address rather than look it up as an interface name.
            ccurl_easy_setopt_string(easy, CURLOPT_INTERFACE, "host!" + local)
        }
        ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.millis(connectTimeout))
        if case .streaming = sink {
            // An event stream holds its connection for its whole life: it gets a fresh one and closes it at the end.
            // Looking for a reusable connection walks every connection to the host (thousands of busy streams for a
            // load driver) and kept ones would pile up in the cache, so neither is worth it.
            ccurl_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1)
            ccurl_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1)
        }
        if let timeout = request.timeout ?? defaultTimeout {
            ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Self.millis(timeout))
        }
        ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me)
        ccurl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWrite)
        ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me)
        ccurl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeader)

        let method = request.method.uppercased()
        switch method {
        case "GET": ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
        case "HEAD": ccurl_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        case "POST": ccurl_easy_setopt_long(easy, CURLOPT_POST, 1)
        default: ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method)
        }
        if let body = request.body {
            ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { raw in
                // COPYPOSTFIELDS copies the bytes, so the buffer need not outlive this call.
                _ = ccurl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
        } else if method == "POST" || method == "PUT" {
            ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, 0)
            ccurl_easy_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, "")
        }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        // Bytes, not `contains("\r")`: that is Foundation's substring search (2.8 % of the push driver's samples).
        func breaksLine(_ text: String) -> Bool { text.utf8.contains { $0 == 13 || $0 == 10 } }
        for header in request.headers {
            guard !breaksLine(header.name), !breaksLine(header.value) else {
                return TransportError(code: "invalid_request", message: "header \(header.name) contains a line break")
            }
            list = curl_slist_append(list, "\(header.name): \(header.value)")
        }
        // No `Expect: 100-continue` round trip for larger bodies.
        list = curl_slist_append(list, "Expect:")
        headerList = list
        ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        return nil
    }

    static func millis(_ d: Duration) -> Int {
        let (s, atto) = d.components
        return max(1, Int(s) * 1000 + Int(atto / 1_000_000_000_000_000))
    }

    /// Releases curl resources. Runs on the driver thread after the handle left the multi handle.
    func cleanup() {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
    }

    func received(header line: String) {
        var scalars = Substring(line).unicodeScalars
        while let last = scalars.last, last == "\r" || last == "\n" { scalars.removeLast() }
        let trimmed = String(scalars)
        if trimmed.hasPrefix("HTTP/") {
            // A new status line (after 1xx or a redirect) starts a new header block.
            headers = []
            let parts = trimmed.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        } else if trimmed.isEmpty {
            if status >= 200 { deliverHead() }
        } else if let colon = trimmed.firstIndex(of: ":") {
            let name = String(trimmed[..<colon])
            let value = trimmed[trimmed.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers.append((name, String(value)))
        }
    }

    func deliverHead() {
        guard !headDelivered else { return }
        headDelivered = true
        if case .streaming(let head, _, _) = sink { head(.success((status, headers))) }
    }

    func received(body bytes: UnsafeBufferPointer<UInt8>) {
        switch sink {
        case .buffered: body.append(contentsOf: bytes)
        case .streaming(_, let chunk, _):
            deliverHead()
            chunk(Array(bytes))
        }
    }

    /// Finishes the transfer exactly once.
    func finish(_ error: TransportError?) {
        guard !finished else { return }
        finished = true
        switch sink {
        case .buffered(let done):
            if let error { done(.failure(error)) } else { done(.success(TransportResponse(status: status, headers: headers, body: body, connectionReused: newConnections == 0))) }
        case .streaming(let head, _, let end):
            if !headDelivered {
                headDelivered = true
                if let error { head(.failure(error)) } else { head(.success((status, headers))) }
            }
            end(error)
        }
    }
}

private func curlWrite(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let buffer, let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    buffer.withMemoryRebound(to: UInt8.self, capacity: length) { p in
        transfer.received(body: UnsafeBufferPointer(start: p, count: length))
    }
    return length
}

private func curlHeader(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let buffer, let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    let line = buffer.withMemoryRebound(to: UInt8.self, capacity: length) { p in
        String(decoding: UnsafeBufferPointer(start: p, count: length), as: UTF8.self)
    }
    transfer.received(header: line)
    return length
}
