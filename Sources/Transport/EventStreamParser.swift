/// One event of a `text/event-stream` (WHATWG HTML §9.2).
public struct ServerSentEvent: Sendable, Equatable {
    /// The `id:` field, if any.
    public var id: String?
    /// The `event:` type; `message` when absent.
    public var event: String
    /// The `data:` lines joined with `\n`.
    public var data: String

    public init(id: String? = nil, event: String = "message", data: String) {
        self.id = id
        self.event = event
        self.data = data
    }
}

/// What an event stream yields: events, and comment lines (used as keepalives).
public enum EventStreamItem: Sendable, Equatable {
    case event(ServerSentEvent)
    case comment(String)
}

/// Incremental `text/event-stream` parser: feed bytes as they arrive, get items out.
public struct EventStreamParser: Sendable {
    private var buffer: [UInt8] = []
    private var id: String?
    private var event: String?
    private var data: [String] = []
    private var sawData = false
    /// The id of the last event dispatched (for `Last-Event-ID` on reconnect).
    public private(set) var lastEventID: String?

    public init() {}

    /// Feeds bytes; returns the items completed by them.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [EventStreamItem] {
        buffer.append(contentsOf: bytes)
        var items: [EventStreamItem] = []
        var start = 0
        var i = 0
        while i < buffer.count {
            let b = buffer[i]
            if b == 10 || b == 13 {
                let line = String(decoding: buffer[start..<i], as: UTF8.self)
                // CRLF counts as one line end.
                if b == 13, i + 1 < buffer.count, buffer[i + 1] == 10 { i += 1 } else if b == 13, i + 1 == buffer.count { break }
                if let item = process(line) { items.append(item) }
                start = i + 1
            }
            i += 1
        }
        buffer.removeFirst(start)
        return items
    }

    private mutating func process(_ line: String) -> EventStreamItem? {
        if line.isEmpty {
            defer { data = []; event = nil; sawData = false }
            guard sawData else { return nil }
            if let id { lastEventID = id }
            return .event(ServerSentEvent(id: id, event: event ?? "message", data: data.joined(separator: "\n")))
        }
        if line.hasPrefix(":") {
            var text = line.dropFirst()
            if text.hasPrefix(" ") { text = text.dropFirst() }
            return .comment(String(text))
        }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = Substring(line)
            value = ""
        }
        switch field {
        case "data": data.append(String(value)); sawData = true
        case "event": event = String(value)
        case "id": if !value.utf8.contains(0) { id = String(value) }
        default: break  // `retry` and unknown fields are ignored
        }
        return nil
    }
}
