import Transport

extension SurveyClientError {
    /// A stable code of ``SurveyClientError`` (``SurveyClientError/code`` is its raw value; codes a server sent in its
    /// error body, like `push_token_required`, keep their wire spelling).
    ///
    /// A struct with static members rather than an enum, as async-http-client's `HTTPClientError` is: a new code in a
    /// later version breaks no exhaustive `switch` in client code, and a code the SDK does not name is still a `Code`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's wire spelling (`survey_not_found`).
        public let rawValue: String
        /// The code with this spelling (any string: codes a server sent are kept as they came).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The wire spelling.
        public var description: String { rawValue }

        /// Registration was refused for a reason without a code of its own.
        public static let registrationFailed = Code(rawValue: "registration_failed")
        /// The study requires a push token at registration (server-scheduled studies).
        public static let pushTokenRequired = Code(rawValue: "push_token_required")
        /// The server refused the credentials.
        public static let invalidCredentials = Code(rawValue: "invalid_credentials")
        /// The network failed (no answer).
        public static let transport = Code(rawValue: "transport")
        /// The relay refused to issue a token.
        public static let relayRefused = Code(rawValue: "relay_refused")
        /// `/set_fcm_token` failed.
        public static let setTokenFailed = Code(rawValue: "set_token_failed")
        /// The relay no longer knows the token (rotated or deleted); the client gets a new one.
        public static let tokenUnregistered = Code(rawValue: "token_unregistered")
        /// No such survey (stored, or on the server).
        public static let surveyNotFound = Code(rawValue: "survey_not_found")
        /// A survey download failed.
        public static let downloadFailed = Code(rawValue: "download_failed")
        /// Push fields that are not a survey push.
        public static let badPush = Code(rawValue: "bad_push")
        /// The call needs a registered client.
        public static let notRegistered = Code(rawValue: "not_registered")
        /// Earlier answers to the survey are still waiting to be uploaded.
        public static let submissionPending = Code(rawValue: "submission_pending")
        /// The answers could not be encrypted.
        public static let encryptionFailed = Code(rawValue: "encryption_failed")
        /// The upload failed; it is retried in the background.
        public static let uploadFailed = Code(rawValue: "upload_failed")
        /// The server refused the upload for good.
        public static let uploadRejected = Code(rawValue: "upload_rejected")
        /// The storage directory could not be read or written.
        public static let storage = Code(rawValue: "storage")
        /// Another client holds the storage directory.
        public static let storageLocked = Code(rawValue: "storage_locked")
        /// The calling task was cancelled: nothing failed, and nothing is retried on its behalf.
        public static let cancelled = Code(rawValue: "cancelled")
        /// A push token handed over by the app is empty (``SurveyClient/updatePushToken(_:)``).
        public static let invalidToken = Code(rawValue: "invalid_token")
        /// A telemetry ping is larger than the ingestion limit; it is dropped (reported as an event).
        public static let telemetryTooLarge = Code(rawValue: "telemetry_too_large")
        /// The telemetry endpoint has no ingestion route; pings stay queued for this run (reported as an event).
        public static let telemetryRouteMissing = Code(rawValue: "telemetry_route_missing")
        /// The telemetry endpoint refused a ping for good; it is dropped (reported as an event).
        public static let telemetryRejected = Code(rawValue: "telemetry_rejected")
        /// A telemetry upload failed; the ping stays queued and is retried.
        public static let telemetryFailed = Code(rawValue: "telemetry_failed")
        /// No `featuresURL` is configured: the cached copy or the app's defaults serve.
        public static let featuresUnavailable = Code(rawValue: "features_unavailable")
        /// The features endpoint did not answer with feature values; the cached copy stays in use.
        public static let featuresFailed = Code(rawValue: "features_failed")
        /// A feature's value from the server does not read as the app's type (``SurveyClient/featureValue(_:defaults:)``).
        public static let featureInvalid = Code(rawValue: "feature_invalid")
        /// A microsurvey cannot take that input now (submit without an option, an option not offered, anything after
        /// its end).
        public static let invalidTransition = Code(rawValue: "invalid_transition")
        /// A message cannot be shown as asked (a microsurvey without its question).
        public static let malformedMessage = Code(rawValue: "malformed_message")
        /// A message's action does not make a URL.
        public static let malformedAction = Code(rawValue: "malformed_action")
        /// The client was closed: it takes no more calls (make a new one on the directory).
        public static let closed = Code(rawValue: "closed")

        /// Every code the SDK names.
        public static let allCases: [Code] = [
            .registrationFailed, .pushTokenRequired, .invalidCredentials, .transport, .relayRefused, .setTokenFailed,
            .tokenUnregistered, .surveyNotFound, .downloadFailed, .badPush, .notRegistered, .submissionPending,
            .encryptionFailed, .uploadFailed, .uploadRejected, .storage, .storageLocked, .invalidToken, .telemetryTooLarge, .telemetryRouteMissing, .telemetryRejected, .telemetryFailed,
            .featuresUnavailable, .featuresFailed, .featureInvalid, .invalidTransition, .malformedMessage, .malformedAction, .cancelled, .closed,
        ]
    }

    /// The code as a ``Code`` (compare with its static members: `error.kind == .surveyNotFound`).
    public var kind: Code { Code(rawValue: code) }

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
