#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `multipart/form-data` body (RFC 7578), as iOS sends uploads.
public struct MultipartForm: Sendable {
    /// One part: its form name, optional file name and bytes.
    public struct Part: Sendable, Equatable {
        /// The part's form field name.
        public var name: String
        /// The part's file name, for a file part.
        public var filename: String?
        /// The part's `Content-Type`, when given.
        public var contentType: String?
        /// The part's bytes.
        public var body: [UInt8]

        /// Creates the value from its fields.
        public init(name: String, filename: String? = nil, contentType: String? = nil, body: [UInt8]) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.body = body
        }
    }

    /// The parts in order.
    public var parts: [Part]

    /// Creates the value from its fields.
    public init(parts: [Part]) { self.parts = parts }

    /// An error parsing a multipart body.
    public struct ParseError: Error, Sendable, Equatable {
        /// What is wrong with the body.
        public var message: String
    }

    /// Extracts the boundary parameter of a `multipart/form-data; boundary=...` content type.
    public static func boundary(fromContentType contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let kv = parameter.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingSpaces().lowercased() == "boundary" else { continue }
            var value = kv[1].trimmingSpaces()
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty || value.utf8.count > maxBoundaryLength ? nil : value
        }
        return nil
    }

    /// RFC 2046 §5.1.1: a boundary has 1 to 70 characters. Longer ones are refused, which also keeps the boundary search
    /// linear in the body (each position compares at most 74 bytes).
    public static let maxBoundaryLength = 70

    /// The most parts a body may have (Beiwe's uploads have 5 or so).
    public static let maxParts = 1_000

    /// Parses a body with the given boundary.
    public init(parsing body: [UInt8], boundary: String) throws(ParseError) {
        guard !boundary.isEmpty, boundary.utf8.count <= Self.maxBoundaryLength else {
            throw ParseError(message: "the boundary must have 1-\(Self.maxBoundaryLength) characters")
        }
        let delimiter = Array("--\(boundary)".utf8)
        var parts: [Part] = []
        guard var position = Self.find(delimiter, in: body, from: 0) else {
            throw ParseError(message: "boundary not found")
        }
        while true {
            position += delimiter.count
            // "--" after a delimiter closes the body.
            if position + 1 < body.count, body[position] == 45, body[position + 1] == 45 { break }
            // Skip the rest of the delimiter line.
            guard let lineEnd = Self.find([13, 10], in: body, from: position) else { throw ParseError(message: "truncated part") }
            let headerStart = lineEnd + 2
            guard let headerEnd = Self.find([13, 10, 13, 10], in: body, from: headerStart) else {
                throw ParseError(message: "part headers not terminated")
            }
            let headerText = String(decoding: body[headerStart..<headerEnd], as: UTF8.self)
            let contentStart = headerEnd + 4
            guard let next = Self.find([13, 10] + delimiter, in: body, from: contentStart) else {
                throw ParseError(message: "closing boundary missing")
            }
            var name: String?
            var filename: String?
            var contentType: String?
            for line in headerText.split(separator: "\r\n") {
                let kv = line.split(separator: ":", maxSplits: 1)
                guard kv.count == 2 else { continue }
                let key = kv[0].trimmingSpaces().lowercased()
                let value = kv[1].trimmingSpaces()
                if key == "content-disposition" {
                    name = Self.parameter("name", in: value)
                    filename = Self.parameter("filename", in: value)
                } else if key == "content-type" {
                    contentType = value
                }
            }
            guard let name else { throw ParseError(message: "part without a name") }
            guard parts.count < Self.maxParts else { throw ParseError(message: "more than \(Self.maxParts) parts") }
            parts.append(Part(name: name, filename: filename, contentType: contentType, body: Array(body[contentStart..<next])))
            position = next + 2
        }
        self.parts = parts
    }

    /// The serialized body for the given boundary.
    public func encoded(boundary: String) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            out += Array("--\(boundary)\r\n".utf8)
            var disposition = "Content-Disposition: form-data; name=\"\(part.name)\""
            if let filename = part.filename { disposition += "; filename=\"\(filename)\"" }
            out += Array((disposition + "\r\n").utf8)
            if let type = part.contentType { out += Array("Content-Type: \(type)\r\n".utf8) }
            out += [13, 10]
            out += part.body
            out += [13, 10]
        }
        out += Array("--\(boundary)--\r\n".utf8)
        return out
    }

    /// The text fields (parts without a file name, plus file parts as UTF-8) as a form, last value winning.
    public func asForm() -> FormBody {
        FormBody(parts.map { ($0.name, String(decoding: $0.body, as: UTF8.self)) })
    }

    private static func parameter(_ name: String, in header: String) -> String? {
        for item in header.split(separator: ";").dropFirst() {
            let kv = item.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingSpaces().lowercased() == name else { continue }
            var value = kv[1].trimmingSpaces()
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return nil
    }

    /// The first index of `needle` in `haystack` at or after `start`: `memchr` finds each candidate first byte and
    /// `memcmp` checks the rest, both in C. A boundary has at most 70 bytes, so the work is at most ~74 byte compares per
    /// body byte (and about two on near-miss bodies, whose candidates fail within the first bytes): linear, and fast even
    /// in a debug build, where a byte loop in Swift was what an 8 MB body of near-misses cost.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start >= 0, start <= haystack.count - needle.count else { return nil }
        return haystack.withUnsafeBytes { hay -> Int? in
            needle.withUnsafeBytes { pin -> Int? in
                let base = hay.baseAddress!
                let last = hay.count - pin.count
                var position = start
                while position <= last {
                    guard let hit = memchr(base + position, Int32(pin[0]), last - position + 1) else { return nil }
                    let index = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + index, pin.baseAddress!, pin.count) == 0 { return index }
                    position = index + 1
                }
                return nil
            }
        }
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        let chars: Set<Character> = [" ", "\t"]
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s.removeFirst() }
        while let l = s.last, chars.contains(l) { s.removeLast() }
        return String(s)
    }
}
