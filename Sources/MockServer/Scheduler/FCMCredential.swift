import Foundation
import Logging
import SurveyCrypto
import SurveyWire
import Transport

/// A Google service account as its JSON file gives it: what firebase-admin signs its token requests with.
struct ServiceAccount: Sendable {
    var clientEmail: String
    var privateKeyID: String
    var key: RSAKey
    var tokenURI: String

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads a service-account JSON file's fields (`client_email`, `private_key_id`, `private_key`, `token_uri`).
    init(json bytes: [UInt8]) throws(Invalid) {
        guard let json = try? JSONParser.parse(bytes), case .object = json else { throw Invalid(description: "not a JSON object") }
        func field(_ name: String) throws(Invalid) -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else { throw Invalid(description: "\(name) is missing") }
            return value
        }
        guard try field("type") == "service_account" else { throw Invalid(description: "type is not service_account") }
        clientEmail = try field("client_email")
        privateKeyID = try field("private_key_id")
        tokenURI = try field("token_uri")
        do { key = try RSAKey(privateKeyPEM: try field("private_key")) } catch let error as Invalid { throw error } catch {
            throw Invalid(description: "private_key: \(error)")
        }
    }

    /// The JWT-bearer assertion Google's auth library sends to `token_uri`: RS256, `kid` = the key id, the FCM scope,
    /// valid for an hour from `now`.
    func assertion(now: Date) throws -> String {
        let iat = Int64(now.timeIntervalSince1970)
        let header: JSONValue = ["alg": "RS256", "typ": "JWT", "kid": .string(privateKeyID)]
        let claims: JSONValue = [
            "iss": .string(clientEmail), "aud": .string(tokenURI), "scope": .string(Self.scope),
            "iat": .number(Double(iat)), "exp": .number(Double(iat + 3600)),
        ]
        let signed = Self.segment(try WireJSON.encode(header)) + "." + Self.segment(try WireJSON.encode(claims))
        return signed + "." + Self.segment(try key.signSHA256(Array(signed.utf8)))
    }

    /// The scopes firebase-admin asks for (its `_FIREBASE_SCOPES` include these two for messaging).
    static let scope = "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/firebase.messaging"

    /// Base64url without padding (JWS).
    static func segment(_ bytes: some Sequence<UInt8>) -> String {
        var text = Base64URL.encode(bytes)
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

/// The bearer tokens the mock server presents to FCM v1 under `--profile beiwe`, obtained as firebase-admin obtains
/// them: a JWT signed with the service account's key, exchanged at its `token_uri`, kept until a minute before it
/// expires. The service account is `--fcm-service-account`'s file, or else one the relay makes
/// (`GET /__control/fcm/service-account.json`), fetched once per relay (each relay knows only its own keys).
actor FCMCredential {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let client: TransportClient
    private let project: String
    private let fixed: ServiceAccount?
    private var accounts: [String: ServiceAccount] = [:]
    private var tokens: [String: (token: String, renewAt: Date)] = [:]
    private var inFlight: [String: Task<String, any Error>] = [:]

    init(client: TransportClient, project: String, serviceAccount: ServiceAccount?) {
        self.client = client
        self.project = project
        fixed = serviceAccount
    }

    /// `Bearer <token>` for pushes to `relayURL`; one exchange at a time per relay, whoever asks.
    func authorization(relayURL: String) async throws -> String {
        if let held = tokens[relayURL], held.renewAt > Date() { return "Bearer " + held.token }
        if let running = inFlight[relayURL] { return "Bearer " + (try await running.value) }
        let task = Task { try await self.obtain(relayURL: relayURL) }
        inFlight[relayURL] = task
        defer { inFlight[relayURL] = nil }
        return "Bearer " + (try await task.value)
    }

    /// Forgets the token for `relayURL` (FCM answered 401: the relay restarted, or the token was revoked); the next
    /// push obtains another, and a relay-made service account is fetched again.
    func invalidate(relayURL: String) {
        tokens[relayURL] = nil
        if fixed == nil { accounts[relayURL] = nil }
    }

    private func obtain(relayURL: String) async throws -> String {
        let account = try await serviceAccount(relayURL: relayURL)
        let now = Date()
        let form = FormBody([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", try account.assertion(now: now))])
        var request = TransportRequest.form(account.tokenURI, form.encoded())
        request.timeout = .seconds(10)
        let response = try await client.send(request)
        guard response.status == 200, let body = try? response.decode(JSONValue.self), let token = body["access_token"]?.stringValue else {
            // A relay-made account the relay no longer knows (it restarted): fetched afresh next time.
            if fixed == nil { accounts[relayURL] = nil }
            throw Failure(description: "token_uri answered \(response.status): \(String(response.text.prefix(200)))")
        }
        let lifetime = body["expires_in"]?.numberValue ?? 3600
        tokens[relayURL] = (token, now.addingTimeInterval(max(0, lifetime - 60)))
        return token
    }

    private func serviceAccount(relayURL: String) async throws -> ServiceAccount {
        if let fixed { return fixed }
        if let known = accounts[relayURL] { return known }
        var request = TransportRequest(url: "\(relayURL)/__control/fcm/service-account.json?project_id=\(project)")
        request.timeout = .seconds(10)
        let response = try await client.send(request)
        guard response.status == 200 else {
            throw Failure(description: "the relay's service account (GET /__control/fcm/service-account.json) answered \(response.status)")
        }
        let account = try ServiceAccount(json: response.body)
        accounts[relayURL] = account
        return account
    }
}
