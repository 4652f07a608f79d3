import Hummingbird
import ServerSupport

/// Constructors for the server's API errors.
enum MockServerError {
    static func notFound(_ what: String, _ id: String) -> APIError {
        APIError(.notFound, code: "\(what)_not_found", "no \(what) with id '\(id)'")
    }

    static func badField(_ field: String, _ message: String, code: String = "invalid_field") -> APIError {
        APIError(.badRequest, code: code, message, field: field)
    }

    static func missingField(_ field: String) -> APIError {
        APIError(.badRequest, code: "missing_field", "'\(field)' is required", field: field)
    }
}
