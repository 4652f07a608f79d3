import Foundation
import Logging
import SurveyWire
import Transport

/// Sends survey pushes to the relay: APNs-style for iOS participants, FCM-style for Android ones.
struct PushDispatcher: Sendable {
    /// What the relay said.
    struct Outcome: Sendable {
        /// `sent`, `token_unregistered`, `relay_error`.
        var status: String
        var relayStatus: Int?
        var reason: String?
        /// The relay's message id, when it accepted the push.
        var messageID: String? = nil
    }

    let client: TransportClient
    let relays: RelayRouter
    let fcmProject: String
    let logger: Logger

    init(client: TransportClient, relayURLs: [String], fcmProject: String, logger: Logger) {
        self.client = client
        relays = RelayRouter(urls: relayURLs, client: client, logger: logger)
        self.fcmProject = fcmProject
        self.logger = logger
    }

    func send(token: String, os: String?, push: SurveyPush, id: String) async -> Outcome {
        let relayURL: String
        switch await relays.url(for: token) {
        case .success(let url): relayURL = url
        case .failure(let failure): return Outcome(status: "relay_error", relayStatus: nil, reason: failure.description)
        }
        let data = push.dataFields()
        let request: TransportRequest
        do {
            if os == "ios" {
                var body: [String: JSONValue] = data.mapValues { .string($0) }
                let text = push.surveyIDs.count > 1 ? "You have surveys to take." : "You have a survey to take."
                body["aps"] = ["alert": ["title": "Beiwe", "body": .string(text)], "sound": "default"]
                request = try TransportRequest.json("\(relayURL)/3/device/\(token)", body: JSONValue.object(body))
                    .adding(header: "apns-id", id)
                    .adding(header: "apns-push-type", "alert")
                    .adding(header: "apns-priority", "10")
            } else {
                let message = RelayWire.FCMSendRequest(message: .init(token: token, data: data, android: .init(priority: "high")))
                request = try TransportRequest.json("\(relayURL)/v1/projects/\(fcmProject)/messages:send", body: message)
            }
        } catch {
            return Outcome(status: "relay_error", relayStatus: nil, reason: "could not encode the push: \(error)")
        }
        var timed = request
        timed.timeout = .seconds(10)
        do {
            let response = try await client.send(timed)
            switch response.status {
            case 200:
                // APNs answers the message's id in `apns-id`; FCM names it in `name` (projects/P/messages/ID).
                let messageID = os == "ios" ? (response.header("apns-id") ?? id)
                    : (try? response.decode(RelayWire.FCMSendResponse.self)).flatMap { $0.name.split(separator: "/").last.map(String.init) }
                return Outcome(status: "sent", relayStatus: 200, reason: nil, messageID: messageID)
            case 410, 404:
                return Outcome(status: "token_unregistered", relayStatus: response.status, reason: Self.reason(response))
            case 400 where Self.isDeadToken(response):
                // The provider does not know the token (a relay that lost its state, a token from elsewhere): retrying
                // cannot help, so the participant waits for a new token, as after a 410.
                return Outcome(status: "token_unregistered", relayStatus: 400, reason: Self.reason(response))
            default:
                return Outcome(status: "relay_error", relayStatus: response.status, reason: Self.reason(response))
            }
        } catch {
            logger.warning("push to relay failed", metadata: ["error": "\(error)"])
            return Outcome(status: "relay_error", relayStatus: nil, reason: error.code)
        }
    }

    /// A 400 that names the token itself as unusable: APNs `BadDeviceToken` (Apple: stop sending to it), or FCM
    /// `INVALID_ARGUMENT` whose message says the registration token is not valid (the case Beiwe's push task also treats
    /// as a dead token). Other 400s (a malformed message) stay relay errors.
    static func isDeadToken(_ response: TransportResponse) -> Bool {
        guard let json = try? response.decode(JSONValue.self) else { return false }
        if json["reason"]?.stringValue == "BadDeviceToken" { return true }
        guard json["error"]?["status"]?.stringValue == "INVALID_ARGUMENT", let message = json["error"]?["message"]?.stringValue else { return false }
        return message.lowercased().contains("registration token")
    }

    /// APNs `reason` or FCM `errorCode` from an error body.
    static func reason(_ response: TransportResponse) -> String? {
        guard let json = try? response.decode(JSONValue.self) else { return nil }
        if let reason = json["reason"]?.stringValue { return reason }
        if let details = json["error"]?["details"]?.arrayValue, let code = details.first?["errorCode"]?.stringValue { return code }
        return json["error"]?["status"]?.stringValue
    }
}
