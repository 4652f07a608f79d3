import SurveyWire

/// What one device receives from an FCM v1 `Message`, by platform, as FCM builds it.
///
/// - Android: `data` with `android.data` over it (FCM: "if present, it will override `message.data`"; the relay
///   overrides key by key), and `notification` with `android.notification`'s fields over it, kept under
///   `"notification"` so a device sees what would be shown. Priority, TTL and collapse key from `android`.
/// - iOS (a token FCM would send through APNs): the APNs payload, with `data`'s keys at its top level,
///   `notification` as `aps.alert` (`title`, `body`; `image` as `fcm_options.image`), and `apns.payload` over all of
///   it (its `aps` member by member). Priority, push type, collapse id and expiry from `apns.headers`.
struct FCMDelivery: Equatable, Sendable {
    var payload: JSONValue
    var priority: Int
    var pushType: String
    var collapseID: String?
    /// Seconds the message is kept for an offline device; nil = FCM's default (4 weeks).
    var ttlSeconds: Double?
    /// APNs' `apns-expiration`: when it expires (Unix seconds); 0 = deliver now or never.
    var expiration: Int64?

    struct Invalid: Error, Equatable {
        var field: String
        var value: String
    }

    /// The delivery to an Android device.
    static func android(_ message: RelayWire.FCMSendRequest.Message) throws(Invalid) -> FCMDelivery {
        var object: [String: JSONValue] = [:]
        for (key, value) in message.data ?? [:] { object[key] = .string(value) }
        for (key, value) in message.android?.data ?? [:] { object[key] = .string(value) }
        var shown: [String: JSONValue] = [:]
        if let n = message.notification {
            if let title = n.title { shown["title"] = .string(title) }
            if let body = n.body { shown["body"] = .string(body) }
            if let image = n.image { shown["image"] = .string(image) }
        }
        if case .object(let members)? = message.android?.notification {
            for (key, value) in members { shown[key] = value }
        }
        if !shown.isEmpty { object["notification"] = .object(shown) }
        var ttl: Double?
        if let text = message.android?.ttl {
            guard text.hasSuffix("s"), let seconds = Double(text.dropLast()), seconds >= 0, seconds <= 2_419_200 else {
                throw Invalid(field: "message.android.ttl", value: text)
            }
            ttl = seconds
        }
        let priority: Int
        switch message.android?.priority?.lowercased() {
        case nil, "high": priority = 10
        case "normal": priority = 5
        case let other?: throw Invalid(field: "message.android.priority", value: other)
        }
        return FCMDelivery(payload: .object(object), priority: priority, pushType: shown.isEmpty ? "background" : "alert",
                           collapseID: message.android?.collapseKey, ttlSeconds: ttl)
    }

    /// The delivery to an iOS device.
    static func apple(_ message: RelayWire.FCMSendRequest.Message) throws(Invalid) -> FCMDelivery {
        var object: [String: JSONValue] = [:]
        for (key, value) in message.data ?? [:] { object[key] = .string(value) }
        var aps: [String: JSONValue] = [:]
        if let n = message.notification {
            var alert: [String: JSONValue] = [:]
            if let title = n.title { alert["title"] = .string(title) }
            if let body = n.body { alert["body"] = .string(body) }
            if !alert.isEmpty { aps["alert"] = .object(alert) }
            if let image = n.image { object["fcm_options"] = .object(["image": .string(image)]) }
        }
        if case .object(let members)? = message.apns?.payload {
            for (key, value) in members {
                if key == "aps", case .object(let given) = value {
                    for (name, item) in given { aps[name] = item }
                } else {
                    object[key] = value
                }
            }
        }
        if !aps.isEmpty { object["aps"] = .object(aps) }
        let headers = Dictionary((message.apns?.headers ?? [:]).map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        let pushType = headers["apns-push-type"] ?? (aps["alert"] != nil ? "alert" : "background")
        let priority: Int
        switch headers["apns-priority"] {
        case nil: priority = pushType == "background" ? 5 : 10
        case let text?:
            guard let value = Int(text), [1, 5, 10].contains(value) else { throw Invalid(field: "message.apns.headers.apns-priority", value: text) }
            priority = value
        }
        var expiration: Int64?
        if let text = headers["apns-expiration"] {
            guard let value = Int64(text), value >= 0 else { throw Invalid(field: "message.apns.headers.apns-expiration", value: text) }
            expiration = value
        }
        return FCMDelivery(payload: .object(object), priority: priority, pushType: pushType, collapseID: headers["apns-collapse-id"],
                           ttlSeconds: nil, expiration: expiration)
    }
}
