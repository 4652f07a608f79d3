import SurveyWire

/// The servers' side of ``RequestPath``: the canonical target (one spelling of a path for the guards, intercepts,
/// journal and router, whatever the listener) and how a refusal is answered.
package enum RequestTarget {
    /// Why a target was refused.
    package typealias Refusal = RequestPath.Refusal

    /// The canonical request target, or why it is refused (``RequestPath/canonical(_:)``).
    package static func canonical(_ uri: String) -> Result<String, Refusal> {
        RequestPath.canonical(uri)
    }

    /// The refusal as the servers answer it: 400 `invalid_path`, and the connection closes.
    package static func error(_ refusal: Refusal) -> APIError {
        let why: String
        switch refusal {
        case .notOriginForm: why = "the request target must be a path starting with '/'"
        case .dotSegment: why = "the path has a '.' or '..' segment"
        case .backslash: why = "the path has a backslash"
        case .invalidByte: why = "the request target has a byte outside visible ASCII (percent-encode it)"
        }
        return APIError(.badRequest, code: "invalid_path", why)
    }
}
