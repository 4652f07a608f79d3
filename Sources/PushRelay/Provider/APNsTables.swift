import HTTPTypes

/// Apple's table of APNs answers ("Handling notification responses from APNs"), as data: every reason, its status,
/// when Apple gives it, and what the relay does. The provider routes take each refusal's status from here, the
/// conformance suite (`scripts/conformance`) has a test for every row, and `docs/CONFORMANCE.md` is generated from it
/// (`push-relay --conformance`).
package enum APNsTables {
    /// One row of Apple's table.
    package struct Row: Sendable, Equatable {
        /// APNs' `reason`.
        package var reason: String
        /// The HTTP status Apple answers it with.
        package var status: Int
        /// When Apple answers it (Apple's words, shortened).
        package var when: String
        /// How the relay answers it: nil when it does as Apple does, else the deliberate difference and why.
        package var difference: String?
    }

    /// Apple's table, in its order.
    package static let reasons: [Row] = [
        Row(reason: "BadCollapseId", status: 400, when: "apns-collapse-id is longer than 64 bytes"),
        Row(reason: "BadDeviceToken", status: 400, when: "the token is not a device token, or not one this environment issued"),
        Row(reason: "BadExpirationDate", status: 400, when: "apns-expiration is not a Unix time"),
        Row(reason: "BadMessageId", status: 400, when: "apns-id is not a canonical UUID"),
        Row(reason: "BadPriority", status: 400, when: "apns-priority is not 10, 5 or 1 (or 10 for a background push)"),
        Row(reason: "BadTopic", status: 400, when: "apns-topic is not a valid topic",
            difference: "Apple documents no rule for it; the relay's: empty, with whitespace, or over 255 bytes"),
        Row(reason: "DeviceTokenNotForTopic", status: 400, when: "the token was issued for another app than apns-topic names"),
        Row(reason: "DuplicateHeaders", status: 400, when: "an apns- header is repeated"),
        Row(reason: "IdleTimeout", status: 400, when: "the connection was idle",
            difference: "the relay closes an idle connection with GOAWAY (no error) at --idle-timeout; it sends no IdleTimeout reason"),
        Row(reason: "InvalidPushType", status: 400, when: "apns-push-type is not one APNs knows"),
        Row(reason: "MissingDeviceToken", status: 400, when: "the path has no device token"),
        Row(reason: "MissingTopic", status: 400, when: "token-based authentication without apns-topic"),
        Row(reason: "PayloadEmpty", status: 400, when: "the body is empty"),
        Row(reason: "TopicDisallowed", status: 400, when: "pushing to this topic is not allowed",
            difference: "not simulated: the relay has no per-key topic permissions (a key is good for every app)"),
        Row(reason: "BadCertificate", status: 403, when: "the client certificate is bad",
            difference: "not simulated: the relay takes token-based authentication only, no client certificates"),
        Row(reason: "BadCertificateEnvironment", status: 403, when: "the certificate is for the other environment",
            difference: "not simulated: no client certificates"),
        Row(reason: "ExpiredProviderToken", status: 403, when: "the provider token is older than an hour (relay clock moves age it)"),
        Row(reason: "Forbidden", status: 403, when: "the action is not allowed",
            difference: "not simulated: Apple documents no trigger a provider controls"),
        Row(reason: "InvalidProviderToken", status: 403, when: "the provider token is malformed, or its key or signature unknown"),
        Row(reason: "MissingProviderToken", status: 403, when: "no provider token and no certificate (--provider-auth strict)"),
        Row(reason: "UnrelatedKeyIdInToken", status: 403, when: "the key id is not related to the team",
            difference: "not simulated: keys are registered per key id with no team; an unknown key id is InvalidProviderToken"),
        Row(reason: "BadPath", status: 404, when: "the path is not /3/device/{token}"),
        Row(reason: "MethodNotAllowed", status: 405, when: "the method is not POST"),
        Row(reason: "ExpiredToken", status: 410, when: "the device token has expired",
            difference: "the relay answers Unregistered for every retired token (rotated or deleted); APNs' expired tokens are not told apart"),
        Row(reason: "Unregistered", status: 410, when: "the token is no longer active for the topic (with the time it stopped)"),
        Row(reason: "PayloadTooLarge", status: 413, when: "the payload is over 4096 bytes (5120 for VoIP)"),
        Row(reason: "TooManyProviderTokenUpdates", status: 429, when: "the provider token was renewed too often",
            difference: "not simulated: the relay takes any number of provider tokens"),
        Row(reason: "TooManyRequests", status: 429, when: "too many requests to one device token (--device-rate)"),
        Row(reason: "InternalServerError", status: 500, when: "an internal error (fault: outage with status 500)"),
        Row(reason: "ServiceUnavailable", status: 503, when: "the service is unavailable (fault: outage)"),
        Row(reason: "Shutdown", status: 503, when: "the APNs server is shutting down",
            difference: "a stopping relay sends GOAWAY (no error) and answers the open streams; it sends no Shutdown reason"),
    ]

    /// The status of `reason` (Apple's table); 400 for a reason the table does not have (the relay's own `BadPayload`,
    /// for a body that is not a JSON object: APNs documents no reason for it).
    package static func status(of reason: String) -> HTTPResponse.Status {
        HTTPResponse.Status(code: byReason[reason]?.status ?? 400)
    }

    private static let byReason = Dictionary(uniqueKeysWithValues: reasons.map { ($0.reason, $0) })

    /// Whether `topic` is the app `appID` or one of the topics APNs derives from it for other push types
    /// (``topicSuffixes``): else 400 `DeviceTokenNotForTopic`.
    package static func topic(_ topic: String, isFor appID: String) -> Bool {
        topic == appID || topicSuffixes.contains { topic == appID + $0 }
    }

    /// The topics an app id stands for besides itself (Apple's push types table): `.voip`, `.complication`,
    /// `.pushkit.fileprovider`, `.location-query`, `.push-type.liveactivity`.
    package static let topicSuffixes = [".voip", ".complication", ".pushkit.fileprovider", ".location-query", ".push-type.liveactivity"]
}
