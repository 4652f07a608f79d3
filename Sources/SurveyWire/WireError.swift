/// The JSON error body every endpoint of ours answers with: `{"error": {"code", "message"}}`.
public struct ErrorBody: Codable, Sendable, Equatable {
    /// The error itself.
    public struct Detail: Codable, Sendable, Equatable {
        /// Stable snake_case code, e.g. `push_token_required`.
        public var code: String
        /// Human-readable explanation.
        public var message: String
        /// The request field the error is about, when there is one.
        public var field: String?

        /// An error with its code, explanation and, when there is one, the field at fault.
        public init(code: String, message: String, field: String? = nil) {
            self.code = code
            self.message = message
            self.field = field
        }
    }

    /// The error itself.
    public var error: Detail

    /// An error with its code, explanation and, when there is one, the field at fault.
    public init(code: String, message: String, field: String? = nil) {
        error = Detail(code: code, message: message, field: field)
    }
}
