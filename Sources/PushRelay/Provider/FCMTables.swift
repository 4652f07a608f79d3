/// FCM v1's documented tables, as data: the `ErrorCode` enum (with each code's status), the authentication and
/// permission answers Google's front end gives, and the request validation rules the relay applies. The routes use
/// them, the conformance suite (`scripts/conformance`) has a test for every row, and `docs/CONFORMANCE.md` is
/// generated from them (`push-relay --conformance`).
package enum FCMTables {
    /// One row: a code, its HTTP status and gRPC status name, when FCM gives it, and how the relay differs (nil: it
    /// answers as FCM does).
    package struct Row: Sendable, Equatable {
        package var code: String
        package var status: Int
        package var statusName: String
        package var when: String
        package var difference: String?
    }

    /// FCM's `ErrorCode` table (`FcmError.errorCode`), in its order.
    package static let errorCodes: [Row] = [
        Row(code: "UNSPECIFIED_ERROR", status: 500, statusName: "INTERNAL", when: "no more information is available",
            difference: "not simulated: the relay always knows why it refuses"),
        Row(code: "INVALID_ARGUMENT", status: 400, statusName: "INVALID_ARGUMENT",
            when: "a request parameter is invalid: target, token format, data keys, TTL, priority, payload size"),
        Row(code: "UNREGISTERED", status: 404, statusName: "NOT_FOUND", when: "the token was unregistered (rotated, uninstalled)"),
        Row(code: "SENDER_ID_MISMATCH", status: 403, statusName: "PERMISSION_DENIED", when: "the token belongs to another sender",
            difference: "not simulated: a relay token belongs to no sender, so any project may send to it"),
        Row(code: "QUOTA_EXCEEDED", status: 429, statusName: "RESOURCE_EXHAUSTED", when: "a device's message rate is exceeded (--device-rate)"),
        Row(code: "UNAVAILABLE", status: 503, statusName: "UNAVAILABLE", when: "the server is overloaded (fault: outage)"),
        Row(code: "INTERNAL", status: 500, statusName: "INTERNAL", when: "an unknown internal error (fault: outage with status 500)"),
        Row(code: "THIRD_PARTY_AUTH_ERROR", status: 401, statusName: "UNAUTHENTICATED", when: "the APNs certificate or web push key is invalid",
            difference: "not simulated: the relay delivers to iOS devices without an APNs credential of the project"),
    ]

    /// Google's front end before FCM: credentials and permission (`google.rpc.ErrorInfo` reasons).
    package static let authentication: [Row] = [
        Row(code: "UNAUTHENTICATED (no credentials)", status: 401, statusName: "UNAUTHENTICATED",
            when: "no Authorization header (--provider-auth strict; lenient lets it through)"),
        Row(code: "UNAUTHENTICATED (invalid)", status: 401, statusName: "UNAUTHENTICATED", when: "a bearer token Google never issued"),
        Row(code: "ACCESS_TOKEN_EXPIRED", status: 401, statusName: "UNAUTHENTICATED",
            when: "a bearer token past its expires_in (the relay clock ages it); details hold a google.rpc.ErrorInfo with this reason"),
        Row(code: "IAM_PERMISSION_DENIED", status: 403, statusName: "PERMISSION_DENIED",
            when: "the bearer token's service account is of another project than the URL's"),
    ]

    /// Request validation rules (FCM's `Message` reference).
    package static let rules: [Row] = [
        Row(code: "one target", status: 400, statusName: "INVALID_ARGUMENT", when: "exactly one of token, topic, condition (or fid)"),
        Row(code: "reserved data keys", status: 400, statusName: "INVALID_ARGUMENT",
            when: "data (and android.data) keys from, message_type, and any starting google. or gcm."),
        Row(code: "data values are strings", status: 400, statusName: "INVALID_ARGUMENT", when: "a data value that is not a string"),
        Row(code: "payload size", status: 400, statusName: "INVALID_ARGUMENT", when: "over 4096 bytes of payload"),
        Row(code: "android.ttl", status: 400, statusName: "INVALID_ARGUMENT", when: "not a duration like 3600s, or over 4 weeks"),
        Row(code: "android.priority", status: 400, statusName: "INVALID_ARGUMENT", when: "not normal or high"),
        Row(code: "topic name", status: 400, statusName: "INVALID_ARGUMENT", when: "not [a-zA-Z0-9-_.~%]+"),
        Row(code: "condition", status: 400, statusName: "INVALID_ARGUMENT", when: "more than five topics, or not FCM's grammar"),
    ]

    /// FCM's reserved data keys: `from`, `message_type`, and any key starting `google.` or `gcm.`.
    package static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.")
    }
}
