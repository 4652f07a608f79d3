import Logging

/// Text from a request, made safe to put in a log line or an error message.
package enum LogText {
    /// `text` with control characters written as escapes (`\n`, `\r`, `\t`, `\u{1b}`, ...), so a value from a request
    /// cannot start a forged log line or move the terminal's cursor.
    package static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where needsEscape(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` escaped and cut to at most `limit` characters (an ellipsis marks the cut).
    package static func clip(_ text: String, _ limit: Int) -> String {
        let escaped = escape(text)
        return escaped.count <= limit ? escaped : String(escaped.prefix(max(0, limit - 1))) + "…"
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value)
            || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

/// A log handler that escapes control characters in messages and metadata before a wrapped handler writes them, so
/// every log line of the servers stays one line whatever a request carried (a `file_name` with a newline, say).
package struct EscapingLogHandler: LogHandler {
    private var wrapped: any LogHandler

    /// Wraps `handler` (the servers use `StreamLogHandler.standardError`).
    package init(_ handler: any LogHandler) { wrapped = handler }

    package var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    package var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    package func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: LogText.escape(event.message.description))
        event.metadata = event.metadata.map(Self.escape)
        wrapped.log(event: event)
    }

    static func escape(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.mapValues(escape)
    }

    static func escape(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(LogText.escape(text))
        case .stringConvertible(let item): .string(LogText.escape(item.description))
        case .array(let items): .array(items.map(escape))
        case .dictionary(let items): .dictionary(escape(items))
        }
    }
}
