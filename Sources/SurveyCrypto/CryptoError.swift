/// An error from a cryptographic operation, with a stable machine-readable `code`.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable snake_case identifier, e.g. `invalid_key` or `bad_padding`.
    public let code: String
    /// Human-readable detail.
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func openssl(_ code: String, _ what: String) -> CryptoError {
        CryptoError(code: code, message: "\(what) failed: \(OpenSSLErrors.drain())")
    }
}
