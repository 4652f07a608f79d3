import Foundation
import Hummingbird
import SurveyWire

/// An error answered as `{"error": {"code", "message", "field"?}}` with an HTTP status.
package struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    package var status: HTTPResponse.Status
    /// Stable snake_case code.
    package var code: String
    package var message: String
    package var field: String?
    /// Extra response headers (`Retry-After`, `Allow`, ...).
    package var headers: HTTPFields = [:]

    package init(_ status: HTTPResponse.Status, code: String, _ message: String, field: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    package var description: String { "\(status.code) \(code): \(message)" }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        makeResponse()
    }

    /// The error's JSON response.
    package func makeResponse() -> Response {
        var response = JSONResponse.make(ErrorBody(code: code, message: message, field: field), status: status)
        response.headers.append(contentsOf: headers)
        return response
    }

    /// 400 `invalid_json` for a body that did not decode, naming the failing field when known.
    package static func invalidJSON(_ error: any Error) -> APIError {
        switch error {
        case let e as DecodingError:
            switch e {
            case .keyNotFound(let key, let ctx):
                return APIError(.badRequest, code: "missing_field", "'\(path(ctx.codingPath + [key]))' is required", field: key.stringValue)
            case .typeMismatch(_, let ctx), .valueNotFound(_, let ctx):
                return APIError(.badRequest, code: "invalid_field", "'\(path(ctx.codingPath))' has the wrong type: \(ctx.debugDescription)",
                                field: ctx.codingPath.last?.stringValue)
            case .dataCorrupted(let ctx):
                if let underlying = ctx.underlyingError as? any APIErrorConvertible { return underlying.apiError }
                return APIError(.badRequest, code: ctx.codingPath.isEmpty ? "invalid_json" : "invalid_field",
                                ctx.codingPath.isEmpty ? "the body is not valid JSON" : "'\(path(ctx.codingPath))': \(ctx.debugDescription)",
                                field: ctx.codingPath.last?.stringValue)
            @unknown default:
                return APIError(.badRequest, code: "invalid_json", "\(e)")
            }
        case let e as any APIErrorConvertible:
            return e.apiError
        default:
            return APIError(.badRequest, code: "invalid_json", "\(error)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}

/// Errors from pure modules that know which API error they are.
package protocol APIErrorConvertible: Error {
    var apiError: APIError { get }
}

extension WireRangeError: APIErrorConvertible {
    package var apiError: APIError { APIError(.badRequest, code: code, message, field: field) }
}

/// A response with a ready-made JSON body (used for APNs and FCM error shapes).
package struct RawJSONError: Error, HTTPResponseError, Sendable {
    package var status: HTTPResponse.Status
    package var body: Data
    package var headers: HTTPFields

    package init(_ status: HTTPResponse.Status, body: some Encodable, headers: HTTPFields = [:]) {
        self.status = status
        self.body = (try? WireJSON.encode(body)) ?? Data("{}".utf8)
        self.headers = headers
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONResponse.make(data: body, status: status)
        response.headers.append(contentsOf: headers)
        return response
    }
}

/// JSON response helpers.
package enum JSONResponse {
    /// A JSON response of an encodable value.
    package static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        make(data: (try? WireJSON.encode(value)) ?? Data("null".utf8), status: status)
    }

    /// A JSON response of raw bytes.
    package static func make(data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An empty response with a status (204 and the like).
    package static func empty(_ status: HTTPResponse.Status) -> Response {
        Response(status: status)
    }
}

extension Request {
    /// Reads the whole body, answering 413 `payload_too_large` past `limit` bytes.
    package func collectBody(limit: Int) async throws -> [UInt8] {
        do {
            var buffer = try await body.collect(upTo: limit)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            // NIO's collect throws NIOTooManyBytesError (a bare 413 in Hummingbird); answer ours, with a code and message.
            throw APIError(.contentTooLarge, code: "payload_too_large", "the body is larger than \(limit) bytes")
        }
    }

    /// Reads a JSON object body, rejecting keys outside `allowedKeys` (400 `unknown_field` naming the key), then decodes it.
    package func decodeJSON<T: Decodable>(_ type: T.Type, allowedKeys: Set<String>, limit: Int = 1 << 20) async throws -> T {
        let bytes = try await collectBody(limit: limit)
        guard let object = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)), let members = object.objectValue else {
            throw APIError(.badRequest, code: "invalid_json", "the body must be a JSON object")
        }
        if let unknown = members.keys.sorted().first(where: { !allowedKeys.contains($0) }) {
            throw APIError(.badRequest, code: "unknown_field", "'\(unknown)' is not a field of this request", field: unknown)
        }
        // A NUL (`\u0000`) cannot be stored by PostgreSQL and is cut short as C text: refused on every store alike.
        if let path = Self.nulPath(object) {
            throw APIError(.badRequest, code: "invalid_character", "'\(path)' contains a NUL character", field: path)
        }
        return try Self.decodeChecked(type, bytes)
    }

    /// The dotted path of the first string (or key) holding a NUL, or nil.
    static func nulPath(_ value: JSONValue, at path: String = "") -> String? {
        switch value {
        case .string(let text):
            return text.utf8.contains(0) ? (path.isEmpty ? "body" : path) : nil
        case .array(let items):
            for (i, item) in items.enumerated() {
                if let found = nulPath(item, at: "\(path)[\(i)]") { return found }
            }
            return nil
        case .object(let members):
            for key in members.keys.sorted() {
                let child = path.isEmpty ? key : "\(path).\(key)"
                if key.utf8.contains(0) { return LogText.clip(child, 60) }
                if let found = nulPath(members[key]!, at: child) { return found }
            }
            return nil
        default:
            return nil
        }
    }

    /// Decodes (with `fast` first when given, see `WireJSON.decode(_:from:fast:)`), then checks the value's ranges when
    /// its type declares them (`RangeChecked`): 400 with the field.
    package static func decodeChecked<T: Decodable>(_ type: T.Type, _ bytes: [UInt8],
                                                   fast: (([UInt8]) throws(JSONParser.Failure) -> T)? = nil) throws -> T {
        let value: T
        do {
            if let fast { value = try WireJSON.decode(type, from: bytes, fast: fast) } else { value = try JSONDecoder().decode(type, from: Data(bytes)) }
        } catch {
            throw APIError.invalidJSON(error)
        }
        if let checked = value as? any RangeChecked {
            do { try checked.checkRanges() } catch { throw error.apiError }
        }
        return value
    }

    /// Reads and decodes a JSON body, answering 400 with the failing field, or 413.
    /// - Parameter fast: a reader for hot routes built on `JSONParser`; when it refuses the body, the `JSONDecoder`
    ///   decides, so refusals are worded the same either way.
    package func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int = 1 << 20,
                                         fast: (([UInt8]) throws(JSONParser.Failure) -> T)? = nil) async throws -> T {
        let bytes = try await collectBody(limit: limit)
        guard !bytes.isEmpty else { throw APIError(.badRequest, code: "invalid_json", "the body is empty; a JSON object is required") }
        return try Self.decodeChecked(type, bytes, fast: fast)
    }
}
