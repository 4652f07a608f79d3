import Transport

extension SurveyClientError {
    /// The stable codes of ``SurveyClientError``, as an enum (``SurveyClientError/code`` is its raw value; the codes a
    /// server sent in its error body, like `push_token_required`, keep their wire spelling).
    public enum Code: String, Sendable, CaseIterable {
        case registrationFailed = "registration_failed"
        case pushTokenRequired = "push_token_required"
        case invalidCredentials = "invalid_credentials"
        case transport
        case relayRefused = "relay_refused"
        case setTokenFailed = "set_token_failed"
        case tokenUnregistered = "token_unregistered"
        case surveyNotFound = "survey_not_found"
        case downloadFailed = "download_failed"
        case badPush = "bad_push"
        case notRegistered = "not_registered"
        case submissionPending = "submission_pending"
        case encryptionFailed = "encryption_failed"
        case uploadFailed = "upload_failed"
        case uploadRejected = "upload_rejected"
        case storage
        case storageLocked = "storage_locked"
        /// The calling task was cancelled: nothing failed, and nothing is retried on its behalf.
        case cancelled
        /// The client was closed: it takes no more calls (make a new one on the directory).
        case closed
    }

    /// The code as an enum, or nil for a code a server sent that the SDK does not know.
    public var kind: Code? { Code(rawValue: code) }

    /// The error a call gets after ``SurveyClient/close()``.
    static let closed = SurveyClientError(code: Code.closed.rawValue, message: "the client is closed; make a new one to use the directory again")

    /// The error of a cancelled call.
    static let cancelled = SurveyClientError(code: Code.cancelled.rawValue, message: "the call was cancelled")

    /// A transport failure, or `cancelled` when the task was cancelled (a cancelled call is not a failure to retry).
    static func transport(_ what: String, _ error: any Error) -> SurveyClientError {
        if let transport = error as? TransportError, transport.code == "cancelled" { return .cancelled }
        if error is CancellationError || Task.isCancelled { return .cancelled }
        return SurveyClientError(code: Code.transport.rawValue, message: "\(what): \(error)")
    }

    /// True for `cancelled`.
    var isCancellation: Bool { code == Code.cancelled.rawValue }
}
