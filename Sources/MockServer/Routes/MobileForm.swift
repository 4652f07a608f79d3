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
        let fields: FormBody
        if contentType.lowercased().hasPrefix("multipart/form-data") {
            guard let boundary = MultipartForm.boundary(fromContentType: contentType) else {
                throw APIError(.badRequest, code: "invalid_body",
                               "multipart body without a boundary of 1-\(MultipartForm.maxBoundaryLength) characters")
            }
            do {
                fields = try MultipartForm(parsing: bytes, boundary: boundary).asForm()
            } catch {
                throw APIError(.badRequest, code: "invalid_body", "malformed multipart body: \(error.message)")
            }
        } else {
            do {
                fields = try FormBody(parsingBytes: bytes, maxFields: FormBody.defaultMaxFields)
            } catch {
                throw APIError(.badRequest, code: "too_many_fields", "the form has more than \(error.limit) fields")
            }
        }
        // A NUL would cut the value short wherever it is stored or compared as C text: refuse it, naming the field.
        if let bad = fields.fields.first(where: { $0.name.utf8.contains(0) || $0.value.utf8.contains(0) }) {
            throw APIError(.badRequest, code: "invalid_character", "'\(LogText.clip(bad.name, 40))' contains a NUL character",
                           field: LogText.clip(bad.name, 40))
        }
        return MobileForm(fields: fields, isIOS: isIOS)
    }

    /// A required, non-empty field, else 400 `missing_field`.
    func require(_ name: String) throws -> String {
        guard let value = fields[name], !value.isEmpty else { throw MockServerError.missingField(name) }
        return value
    }
}
