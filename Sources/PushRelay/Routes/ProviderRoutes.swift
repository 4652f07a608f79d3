import Foundation
import HTTPTypes
import Hummingbird
import ServerSupport
import SurveyWire

/// The APNs- and FCM-shaped provider APIs (PROTOCOL.md §3).
struct ProviderRoutes {
    let hub: RelayHub
    let configuration: RelayConfiguration

    static let apnsPushTypes: Set<String> = ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets", "controls"]
    static let thirtyDaysMillis: Int64 = 30 * 86400 * 1000
    static let fourWeeksMillis: Int64 = 28 * 86400 * 1000

    func add(to router: Router<BasicRequestContext>) {
        router.post("/3/device/{token}") { request, context in try await apns(request, context) }
        router.post("/3/device") { _, _ -> Response in
            throw RawJSONError(.badRequest, body: RelayWire.APNsError(reason: "MissingDeviceToken"))
        }
        router.post("/v1/projects/{project}/messages:send") { request, context in try await fcm(request, context) }
    }

    private func header(_ request: Request, _ name: String) -> [String] {
        guard let field = HTTPField.Name(name) else { return [] }
        return request.headers[values: field]
    }

    private func apnsError(_ status: HTTPResponse.Status, _ reason: String, apnsID: String, timestamp: Int64? = nil) -> RawJSONError {
        var headers = HTTPFields()
        headers[HTTPField.Name("apns-id")!] = apnsID
        return RawJSONError(status, body: RelayWire.APNsError(reason: reason, timestamp: timestamp), headers: headers)
    }

    func apns(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let token = try context.parameters.require("token")
        for name in ["apns-id", "apns-expiration", "apns-priority", "apns-collapse-id", "apns-push-type", "apns-topic"] where header(request, name).count > 1 {
            throw apnsError(.badRequest, "DuplicateHeaders", apnsID: UUID().uuidString.lowercased())
        }
        var apnsID = UUID().uuidString.lowercased()
        if let given = header(request, "apns-id").first {
            guard UUID(uuidString: given) != nil, given.count == 36 else { throw apnsError(.badRequest, "BadMessageId", apnsID: apnsID) }
            apnsID = given.lowercased()
        }
        let now = await hub.now()
        var expiresAt: Int64? = now + Self.thirtyDaysMillis
        if let text = header(request, "apns-expiration").first {
            // Up to the year 9999; larger values would overflow the millisecond clock.
            guard let seconds = Int64(text), seconds >= 0, seconds <= 253_402_300_799 else {
                throw apnsError(.badRequest, "BadExpirationDate", apnsID: apnsID)
            }
            expiresAt = seconds == 0 ? now : seconds * 1000
        }
        var priority = 10
        if let text = header(request, "apns-priority").first {
            guard let p = Int(text), [10, 5, 1].contains(p) else { throw apnsError(.badRequest, "BadPriority", apnsID: apnsID) }
            priority = p
        }
        let collapseID = header(request, "apns-collapse-id").first
        if let collapseID, collapseID.utf8.count > 64 { throw apnsError(.badRequest, "BadCollapseId", apnsID: apnsID) }
        let pushType = header(request, "apns-push-type").first ?? "alert"
        guard Self.apnsPushTypes.contains(pushType) else { throw apnsError(.badRequest, "InvalidPushType", apnsID: apnsID) }
        if pushType == "background", priority == 10 { throw apnsError(.badRequest, "BadPriority", apnsID: apnsID) }

        guard TokenFactory.isAPNsShaped(token) else { throw apnsError(.badRequest, "BadDeviceToken", apnsID: apnsID) }
        let body: [UInt8]
        do {
            body = try await request.collectBody(limit: configuration.maxProviderBodyBytes)
        } catch let error as APIError where error.status == .contentTooLarge {
            throw apnsError(.contentTooLarge, "PayloadTooLarge", apnsID: apnsID)
        }
        guard !body.isEmpty else { throw apnsError(.badRequest, "PayloadEmpty", apnsID: apnsID) }
        let limit = pushType == "voip" ? RelayConfiguration.maxVoIPPayloadBytes : configuration.maxAPNsPayloadBytes
        guard body.count <= limit else { throw apnsError(.contentTooLarge, "PayloadTooLarge", apnsID: apnsID) }
        guard let payload = try? WireJSON.decode(JSONValue.self, from: body, fast: JSONParser.parse), payload.objectValue != nil else {
            // APNs has no documented reason for malformed JSON; this relay answers BadPayload.
            throw apnsError(.badRequest, "BadPayload", apnsID: apnsID)
        }
        let message = RelayMessage(id: apnsID, payload: payload, priority: priority, collapseID: collapseID, pushType: pushType,
                                   sentAt: now, expiresAt: expiresAt, phase: .stored)
        switch await hub.send(token: token, platformRequired: .ios, message: message) {
        case .accepted:
            var headers = HTTPFields()
            headers[HTTPField.Name("apns-id")!] = apnsID
            return Response(status: .ok, headers: headers)
        case .unknownToken, .wrongPlatform:
            throw apnsError(.badRequest, "BadDeviceToken", apnsID: apnsID)
        case .unregistered(let at):
            throw apnsError(.gone, "Unregistered", apnsID: apnsID, timestamp: at)
        case .rateLimited:
            throw apnsError(.tooManyRequests, "TooManyRequests", apnsID: apnsID)
        case .outage(let status):
            let reason = switch status {
            case 429: "TooManyRequests"
            case 500: "InternalServerError"
            case 503: "ServiceUnavailable"
            case 413: "PayloadTooLarge"
            default: "ServiceUnavailable"
            }
            throw apnsError(HTTPResponse.Status(code: status), reason, apnsID: apnsID)
        }
    }

    private func fcmError(_ status: HTTPResponse.Status, _ statusName: String, _ errorCode: String, _ message: String) -> RawJSONError {
        RawJSONError(status, body: RelayWire.FCMError(code: Int(status.code), message: message, status: statusName, errorCode: errorCode))
    }

    /// 16 random lowercase hex digits (FCM message ids end with such a suffix).
    static func randomHex16() -> String {
        let digits = Array("0123456789abcdef".utf8)
        var value = UInt64.random(in: 0...UInt64.max)
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 {
            bytes[15 - i] = digits[Int(value & 0xF)]
            value >>= 4
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func fcm(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let project = try context.parameters.require("project")
        let body: [UInt8]
        do {
            body = try await request.collectBody(limit: configuration.maxProviderBodyBytes)
        } catch let error as APIError where error.status == .contentTooLarge {
            throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument: message is too big")
        }
        let send: RelayWire.FCMSendRequest
        do {
            send = try WireJSON.decode(RelayWire.FCMSendRequest.self, from: body, fast: RelayWire.FCMSendRequest.init(json:))
        } catch {
            throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid JSON payload received: \(error)")
        }
        guard let token = send.message.token, !token.isEmpty else {
            throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument: message.token is required")
        }
        let data = send.message.data ?? [:]
        // The size of the data object as JSON: each member is "key":"value" plus a comma (escapes not counted).
        let dataBytes = data.reduce(2) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 }
        guard dataBytes <= configuration.maxAPNsPayloadBytes else {
            throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument: message is too big (\(dataBytes) bytes of data, limit 4096)")
        }
        let now = await hub.now()
        var expiresAt: Int64? = now + Self.fourWeeksMillis
        if let ttl = send.message.android?.ttl {
            guard ttl.hasSuffix("s"), let seconds = Double(ttl.dropLast()), seconds >= 0, seconds <= 2_419_200 else {
                throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl' (\(ttl))")
            }
            expiresAt = now + Int64(seconds * 1000)
        }
        var priority = 10
        switch send.message.android?.priority?.lowercased() {
        case nil, "high": priority = 10
        case "normal": priority = 5
        default:
            throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at 'message.android.priority'")
        }
        let id = "0:\(now)%" + Self.randomHex16()
        var payload: [String: JSONValue] = data.mapValues { .string($0) }
        if let n = send.message.notification {
            // Kept beside the data so a device sees what a notification would show.
            payload["notification"] = .object(["title": n.title.map { .string($0) } ?? .null, "body": n.body.map { .string($0) } ?? .null])
        }
        let message = RelayMessage(id: id, payload: .object(payload), priority: priority, collapseID: send.message.android?.collapseKey,
                                   pushType: send.message.notification == nil ? "background" : "alert",
                                   sentAt: now, expiresAt: expiresAt, phase: .stored)
        switch await hub.send(token: token, platformRequired: nil, message: message) {
        case .accepted:
            // `FCMSendResponse`'s one field, written without a `JSONEncoder` (the hot path).
            return JSONResponse.make(data: Data(JSONValue.object(["name": .string("projects/\(project)/messages/\(id)")]).compactBytes))
        case .unknownToken, .wrongPlatform:
            throw fcmError(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token")
        case .unregistered:
            throw fcmError(.notFound, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")
        case .rateLimited:
            throw fcmError(.tooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for sending messages to this device.")
        case .outage(let status):
            let (name, code) = switch status {
            case 429: ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
            case 500: ("INTERNAL", "INTERNAL")
            case 503: ("UNAVAILABLE", "UNAVAILABLE")
            default: ("UNAVAILABLE", "UNAVAILABLE")
            }
            throw fcmError(HTTPResponse.Status(code: status), name, code, "The service is currently unavailable (fault injection).")
        }
    }
}
