import Foundation

/// An HTTP request for ``TransportClient``.
public struct TransportRequest: Sendable {
    /// `GET`, `POST`, `PUT`, `DELETE`, ...
    public var method: String
    /// Absolute URL (`http://127.0.0.1:8080/path?query`).
    public var url: String
    /// Header fields in order. A `Content-Type` set here wins over the body helpers' default.
    public var headers: [(name: String, value: String)]
    /// Body bytes, or nil for none.
    public var body: [UInt8]?
    /// Total time allowed for the transfer, nil for the client's default. Streams usually pass `.none`.
    public var timeout: Duration?
    /// Local IP address to connect from (e.g. `127.0.0.7`), to spread many connections over several source addresses
    /// and stay clear of one address's ephemeral-port range. nil = the system's choice.
    public var localAddress: String?

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
                timeout: Duration? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// A `POST` with an `application/x-www-form-urlencoded` body.
    public static func form(_ url: String, _ encodedForm: String, method: String = "POST") -> TransportRequest {
        TransportRequest(method: method, url: url, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: Array(encodedForm.utf8))
    }

    /// A request with a JSON body.
    public static func json(_ url: String, method: String = "POST", body: some Encodable) throws -> TransportRequest {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return TransportRequest(method: method, url: url, headers: [("Content-Type", "application/json")],
                           body: [UInt8](try encoder.encode(body)))
    }

    /// A `multipart/form-data` request from an already-encoded body and its boundary.
    public static func multipart(_ url: String, boundary: String, body: [UInt8]) -> TransportRequest {
        TransportRequest(method: "POST", url: url, headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: body)
    }

    /// Adds a header field.
    public func adding(header name: String, _ value: String) -> TransportRequest {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }
}

/// A complete HTTP response.
public struct TransportResponse: Sendable {
    public var status: Int
    /// Header fields of the final response, in order, names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// True when the transfer reused a connection from the client's pool instead of opening one.
    public var connectionReused: Bool

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8], connectionReused: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.connectionReused = connectionReused
    }

    /// The last value of a header field (case-insensitive name).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last { $0.name.lowercased() == lower }?.value
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// Decodes the body as JSON.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: Data(body))
    }
}

/// A transfer that did not produce a response.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable code: `timeout`, `connect_failed`, `cancelled`, `shut_down`, `invalid_request`, or `curl_<n>`.
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
