import Foundation
import Hummingbird
import ServerSupport
import SurveyWire

/// A parsed mobile request: its form fields and whether it came on an `/ios` path.
struct MobileForm: Sendable {
    var fields: FormBody
    var isIOS: Bool

    subscript(name: String) -> String? { fields[name] }

    /// Reads an urlencoded or multipart body (PROTOCOL.md §1).
    static func read(_ request: Request, isIOS: Bool, limit: Int) async throws -> MobileForm {
        let bytes = try await request.collectBody(limit: limit)
        let contentType = request.headers[.contentType] ?? ""
        if contentType.lowercased().hasPrefix("multipart/form-data") {
            guard let boundary = MultipartForm.boundary(fromContentType: contentType) else {
                throw APIError(.badRequest, code: "invalid_body", "multipart body without a boundary")
            }
            do {
                return MobileForm(fields: try MultipartForm(parsing: bytes, boundary: boundary).asForm(), isIOS: isIOS)
            } catch {
                throw APIError(.badRequest, code: "invalid_body", "malformed multipart body: \(error.message)")
            }
        }
        return MobileForm(fields: FormBody(parsingBytes: bytes), isIOS: isIOS)
    }

    /// A required, non-empty field, else 400 `missing_field`.
    func require(_ name: String) throws -> String {
        guard let value = fields[name], !value.isEmpty else { throw MockServerError.missingField(name) }
        return value
    }
}
