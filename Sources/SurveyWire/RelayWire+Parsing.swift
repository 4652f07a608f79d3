extension RelayWire.FCMSendRequest {
    /// Reads an FCM v1 send body without a `JSONDecoder` (the relay's hot path): the same fields and the same
    /// refusals as the `Codable` conformance (`message` required, every field optional and `null` as absent, each of
    /// the right type; unknown members ignored).
    /// - Throws: ``JSONParser/Failure`` naming the first field that is not JSON or not of its type.
    public init(json bytes: [UInt8]) throws(JSONParser.Failure) {
        let root = try JSONParser.parse(bytes)
        func shape(_ path: String, _ expected: String) -> JSONParser.Failure {
            JSONParser.Failure(reason: "\(path) is not \(expected)", offset: 0)
        }
        func object(_ value: JSONValue?, _ path: String) throws(JSONParser.Failure) -> [String: JSONValue]? {
            switch value {
            case nil, .null?: return nil
            case .object(let members)?: return members
            default: throw shape(path, "an object")
            }
        }
        func string(_ value: JSONValue?, _ path: String) throws(JSONParser.Failure) -> String? {
            switch value {
            case nil, .null?: return nil
            case .string(let text)?: return text
            default: throw shape(path, "a string")
            }
        }
        guard case .object(let top) = root else { throw shape("the body", "an object") }
        guard let message = try object(top["message"], "message") else { throw shape("message", "present") }
        func strings(_ value: JSONValue?, _ path: String) throws(JSONParser.Failure) -> [String: String]? {
            guard let members = try object(value, path) else { return nil }
            var strings: [String: String] = [:]
            strings.reserveCapacity(members.count)
            for (key, value) in members {
                guard case .string(let text) = value else { throw shape("\(path).\(key)", "a string") }
                strings[key] = text
            }
            return strings
        }
        func json(_ value: JSONValue?, _ path: String) throws(JSONParser.Failure) -> JSONValue? {
            switch value {
            case nil, .null?: return nil
            case .object?: return value
            default: throw shape(path, "an object")
            }
        }
        var notification: Message.Notification?
        if let members = try object(message["notification"], "message.notification") {
            notification = .init(title: try string(members["title"], "message.notification.title"),
                                 body: try string(members["body"], "message.notification.body"),
                                 image: try string(members["image"], "message.notification.image"))
        }
        var android: Message.Android?
        if let members = try object(message["android"], "message.android") {
            android = .init(ttl: try string(members["ttl"], "message.android.ttl"),
                            collapseKey: try string(members["collapse_key"], "message.android.collapse_key"),
                            priority: try string(members["priority"], "message.android.priority"),
                            data: try strings(members["data"], "message.android.data"),
                            notification: try json(members["notification"], "message.android.notification"))
        }
        var apns: Message.APNS?
        if let members = try object(message["apns"], "message.apns") {
            apns = .init(headers: try strings(members["headers"], "message.apns.headers"),
                         payload: try json(members["payload"], "message.apns.payload"))
        }
        var validateOnly: Bool?
        switch top["validate_only"] {
        case nil, .null?: break
        case .bool(let flag)?: validateOnly = flag
        default: throw shape("validate_only", "a boolean")
        }
        self.init(message: .init(token: try string(message["token"], "message.token"), data: try strings(message["data"], "message.data"),
                                 notification: notification, android: android, apns: apns,
                                 topic: try string(message["topic"], "message.topic"),
                                 condition: try string(message["condition"], "message.condition"),
                                 fid: try string(message["fid"], "message.fid"),
                                 webpush: try json(message["webpush"], "message.webpush"),
                                 fcmOptions: try json(message["fcm_options"], "message.fcm_options")),
                  validateOnly: validateOnly)
    }
}

extension RelayWire.AckRequest {
    /// Reads an ack body (`{"ids": [...]}`, unknown members ignored) without a `JSONDecoder`, as the `Codable`
    /// conformance does.
    /// - Throws: ``JSONParser/Failure`` when it is not JSON or `ids` is missing or not an array of strings.
    public init(json bytes: [UInt8]) throws(JSONParser.Failure) {
        guard case .object(let top) = try JSONParser.parse(bytes), case .array(let values)? = top["ids"] else {
            throw JSONParser.Failure(reason: "ids is not an array", offset: 0)
        }
        var ids: [String] = []
        ids.reserveCapacity(values.count)
        for value in values {
            guard case .string(let id) = value else { throw JSONParser.Failure(reason: "ids holds a non-string", offset: 0) }
            ids.append(id)
        }
        self.init(ids: ids)
    }
}
