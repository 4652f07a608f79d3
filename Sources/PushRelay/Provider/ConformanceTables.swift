import SurveyWire

/// The relay's conformance tables as one JSON document (`push-relay --conformance`): Apple's APNs reasons and FCM's
/// error codes, authentication answers and validation rules, each row with what the relay does. `scripts/conformance`
/// tests every row and renders `docs/CONFORMANCE.md` from this document.
package enum ConformanceTables {
    /// The document: `{"apns": [row], "fcm": {"error_codes", "authentication", "rules"}}`; a row is `{"name", "status",
    /// "status_name"?, "when", "difference"?}`.
    package static var json: JSONValue {
        func row(_ name: String, _ status: Int, _ statusName: String?, _ when: String, _ difference: String?) -> JSONValue {
            var object: [String: JSONValue] = ["name": .string(name), "status": .number(Double(status)), "when": .string(when)]
            if let statusName { object["status_name"] = .string(statusName) }
            if let difference { object["difference"] = .string(difference) }
            return .object(object)
        }
        func rows(_ table: [FCMTables.Row]) -> JSONValue {
            .array(table.map { row($0.code, $0.status, $0.statusName, $0.when, $0.difference) })
        }
        return .object([
            "apns": .array(APNsTables.reasons.map { row($0.reason, $0.status, nil, $0.when, $0.difference) }),
            "fcm": .object(["error_codes": rows(FCMTables.errorCodes), "authentication": rows(FCMTables.authentication),
                            "rules": rows(FCMTables.rules)]),
        ])
    }
}
