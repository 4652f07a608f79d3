import Foundation
import Logging
import SurveyWire
import Transport

/// Sends survey pushes to the relay: APNs-style for iOS participants, FCM-style for Android ones; under `--profile beiwe`
/// all through FCM v1 as Beiwe's push task sends them.
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
    /// Set under `--profile beiwe`: every push goes through FCM v1 with a bearer token, shaped as Beiwe's push task
    /// shapes it (``beiweMessage(token:os:push:)``).
    let beiweCredential: FCMCredential?

    init(client: TransportClient, relayURLs: [String], fcmProject: String, logger: Logger, beiweCredential: FCMCredential? = nil) {
        self.client = client
        relays = RelayRouter(urls: relayURLs, client: client, logger: logger)
        self.fcmProject = fcmProject
        self.logger = logger
        self.beiweCredential = beiweCredential
    }

    func send(token: String, os: String?, push: SurveyPush, id: String) async -> Outcome {
        let relayURL: String
        switch await relays.url(for: token) {
        case .success(let url): relayURL = url
        case .failure(let failure): return Outcome(status: "relay_error", relayStatus: nil, reason: failure.description)
        }
        if let credential = beiweCredential {
            return await sendAsBeiwe(token: token, os: os, push: push, relayURL: relayURL, credential: credential)
        }
        let data = push.dataFields()
        let request: TransportRequest
        do {
            if os == "ios" {
                var body: [String: JSONValue] = data.mapValues { .string($0) }
                body["aps"] = ["alert": ["title": "Beiwe", "body": .string(Self.alertBody(push))], "sound": "default"]
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
        return await deliver(request, apnsID: os == "ios" ? id : nil)
    }

    /// What the alert says (Beiwe's wording).
    static func alertBody(_ push: SurveyPush) -> String {
        push.surveyIDs.count > 1 ? "You have surveys to take." : "You have a survey to take."
    }

    /// The FCM v1 message Beiwe's push task sends (`services/survey_push_notifications.py`): for Android the fields in
    /// `android.data` with high priority; for iOS the fields in `data` with a `notification` (FCM's APNs bridge makes
    /// them the APNs payload's top level and `aps.alert`). No TTL, collapse key or APNs options.
    static func beiweMessage(token: String, os: String?, push: SurveyPush) -> RelayWire.FCMSendRequest {
        let data = push.dataFields()
        if os == "ios" {
            return .init(message: .init(token: token, data: data, notification: .init(title: "Beiwe", body: alertBody(push))))
        }
        return .init(message: .init(token: token, data: nil, android: .init(priority: "high", data: data)))
    }

    /// Sends through FCM v1 with the credential's bearer token; a 401 (the token expired or the relay restarted)
    /// renews the token once, as Google's auth library does.
    private func sendAsBeiwe(token: String, os: String?, push: SurveyPush, relayURL: String, credential: FCMCredential) async -> Outcome {
        let url = "\(relayURL)/v1/projects/\(fcmProject)/messages:send"
        for attempt in 0..<2 {
            let request: TransportRequest
            do {
                let authorization = try await credential.authorization(relayURL: relayURL)
                request = try TransportRequest.json(url, body: Self.beiweMessage(token: token, os: os, push: push))
                    .adding(header: "Authorization", authorization)
            } catch {
                return Outcome(status: "relay_error", relayStatus: nil, reason: "no FCM credential: \(error)")
            }
            let outcome = await deliver(request, apnsID: nil)
            if outcome.relayStatus == 401, attempt == 0 {
                await credential.invalidate(relayURL: relayURL)
                continue
            }
            return outcome
        }
        return Outcome(status: "relay_error", relayStatus: 401, reason: "UNAUTHENTICATED")
    }

    /// Sends one provider request and reads what the relay said. `apnsID`: the request went to APNs with this id (the
    /// message id is then its `apns-id`; otherwise FCM names it in `name`).
    private func deliver(_ request: TransportRequest, apnsID: String?) async -> Outcome {
        var timed = request
        timed.timeout = .seconds(10)
        do {
            let response = try await client.send(timed)
            switch response.status {
            case 200:
                // APNs answers the message's id in `apns-id`; FCM names it in `name` (projects/P/messages/ID).
                let messageID = apnsID.map { response.header("apns-id") ?? $0 }
                    ?? (try? response.decode(RelayWire.FCMSendResponse.self)).flatMap { $0.name.split(separator: "/").last.map(String.init) }
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
