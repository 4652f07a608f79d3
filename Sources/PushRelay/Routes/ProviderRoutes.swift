import Foundation
import HTTPTypes
import Hummingbird
import ServerSupport
import SurveyWire

/// The APNs-shaped provider API (PROTOCOL.md §3); FCM's is ``FCMRoutes``.
struct ProviderRoutes {
    let hub: RelayHub
    let configuration: RelayConfiguration
    let auth: APNsAuth

    static let apnsPushTypes: Set<String> = ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets", "controls"]
    static let thirtyDaysMillis: Int64 = 30 * 86400 * 1000

    func add(to router: Router<BasicRequestContext>) {
        router.post("/3/device/{token}") { request, context in try await apns(request, context) }
        router.post("/3/device") { _, _ -> Response in
            throw RawJSONError(.badRequest, body: RelayWire.APNsError(reason: "MissingDeviceToken"))
        }
    }

    private func header(_ request: Request, _ name: String) -> [String] {
        guard let field = HTTPField.Name(name) else { return [] }
        return request.headers[values: field]
    }

    /// APNs' refusal, with the status Apple's table gives `reason` (``APNsTables``): a reason cannot be answered with
    /// another status by mistake. Only an outage fault names its own status (`status`).
    private func apnsError(_ reason: String, apnsID: String, timestamp: Int64? = nil, status: HTTPResponse.Status? = nil) -> RawJSONError {
        var headers = HTTPFields()
        headers[HTTPField.Name("apns-id")!] = apnsID
        return RawJSONError(status ?? APNsTables.status(of: reason), body: RelayWire.APNsError(reason: reason, timestamp: timestamp), headers: headers)
    }

    func apns(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let token = try context.parameters.require("token")
        for name in ["apns-id", "apns-expiration", "apns-priority", "apns-collapse-id", "apns-push-type", "apns-topic"] where header(request, name).count > 1 {
            throw apnsError("DuplicateHeaders", apnsID: RandomHex.uuid())
        }
        var apnsID = RandomHex.uuid()
        if let given = header(request, "apns-id").first {
            guard UUID(uuidString: given) != nil, given.count == 36 else { throw apnsError("BadMessageId", apnsID: apnsID) }
            apnsID = given.lowercased()
        }
        // Token-based authentication, as APNs answers it (`--provider-auth`); a provider token needs a topic.
        let offset = hub.clockOffsetSeconds()
        switch auth.check(authorization: header(request, "authorization").first, now: FCMRoutes.unixNow, clockOffset: offset) {
        case .valid:
            guard header(request, "apns-topic").first != nil else { throw apnsError("MissingTopic", apnsID: apnsID) }
        case .absent where configuration.providerAuth == .lenient:
            break
        case .absent:
            throw apnsError("MissingProviderToken", apnsID: apnsID)
        case .refused(let reason):
            throw apnsError(reason, apnsID: apnsID)
        }
        let now = hub.now()
        var expiresAt: Int64? = now + Self.thirtyDaysMillis
        if let text = header(request, "apns-expiration").first {
            // Up to the year 9999; larger values would overflow the millisecond clock.
            guard let seconds = Int64(text), seconds >= 0, seconds <= 253_402_300_799 else {
                throw apnsError("BadExpirationDate", apnsID: apnsID)
            }
            expiresAt = seconds == 0 ? now : seconds * 1000
        }
        var priority = 10
        if let text = header(request, "apns-priority").first {
            guard let p = Int(text), [10, 5, 1].contains(p) else { throw apnsError("BadPriority", apnsID: apnsID) }
            priority = p
        }
        if let topic = header(request, "apns-topic").first, topic.isEmpty || topic.utf8.count > 255 || topic.contains(where: \.isWhitespace) {
            throw apnsError("BadTopic", apnsID: apnsID)
        }
        let collapseID = header(request, "apns-collapse-id").first
        if let collapseID, collapseID.utf8.count > 64 { throw apnsError("BadCollapseId", apnsID: apnsID) }
        let pushType = header(request, "apns-push-type").first ?? "alert"
        guard Self.apnsPushTypes.contains(pushType) else { throw apnsError("InvalidPushType", apnsID: apnsID) }
        if pushType == "background", priority == 10 { throw apnsError("BadPriority", apnsID: apnsID) }

        guard TokenFactory.isAPNsShaped(token) else { throw apnsError("BadDeviceToken", apnsID: apnsID) }
        let body: [UInt8]
        do {
            body = try await request.collectBody(limit: configuration.maxProviderBodyBytes)
        } catch let error as APIError where error.status == .contentTooLarge {
            throw apnsError("PayloadTooLarge", apnsID: apnsID)
        }
        guard !body.isEmpty else { throw apnsError("PayloadEmpty", apnsID: apnsID) }
        let limit = pushType == "voip" ? RelayConfiguration.maxVoIPPayloadBytes : configuration.maxAPNsPayloadBytes
        guard body.count <= limit else { throw apnsError("PayloadTooLarge", apnsID: apnsID) }
        guard let payload = try? WireJSON.decode(JSONValue.self, from: body, fast: JSONParser.parse), payload.objectValue != nil else {
            // APNs has no documented reason for malformed JSON; this relay answers BadPayload.
            throw apnsError("BadPayload", apnsID: apnsID)
        }
        let message = RelayMessage(id: apnsID, payload: payload, priority: priority, collapseID: collapseID, pushType: pushType,
                                   sentAt: now, expiresAt: expiresAt, phase: .stored)
        switch await hub.send(token: token, platformRequired: .ios, message: message, topic: header(request, "apns-topic").first) {
        case .accepted:
            var headers = HTTPFields()
            headers[HTTPField.Name("apns-id")!] = apnsID
            return Response(status: .ok, headers: headers)
        case .unknownToken, .wrongPlatform:
            throw apnsError("BadDeviceToken", apnsID: apnsID)
        case .topicMismatch:
            throw apnsError("DeviceTokenNotForTopic", apnsID: apnsID)
        case .unregistered(let at):
            throw apnsError("Unregistered", apnsID: apnsID, timestamp: at)
        case .rateLimited:
            throw apnsError("TooManyRequests", apnsID: apnsID)
        case .outage(let status):
            let reason = switch status {
            case 429: "TooManyRequests"
            case 500: "InternalServerError"
            case 503: "ServiceUnavailable"
            case 413: "PayloadTooLarge"
            default: "ServiceUnavailable"
            }
            throw apnsError(reason, apnsID: apnsID, status: HTTPResponse.Status(code: status))
        }
    }
}
