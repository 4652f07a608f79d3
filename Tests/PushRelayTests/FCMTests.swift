import Crypto
import Foundation
@testable import PushRelay
import SurveyWire
import Testing
import _CryptoExtras

/// FCM v1's pure parts: topic conditions, each platform's delivery of a `Message`, and the OAuth2 exchange.
@Suite struct FCMTests {
    typealias Message = RelayWire.FCMSendRequest.Message

    // MARK: Conditions

    @Test func conditionsFollowFCMsGrammar() throws {
        let c = try TopicCondition("'a' in topics && ('b' in topics || !('c' in topics))")
        #expect(c.matches(["a", "b"]))
        #expect(c.matches(["a"]))
        #expect(!c.matches(["a", "c"]))
        #expect(!c.matches(["b"]))
        // && binds tighter than ||.
        let d = try TopicCondition("\"x\" in topics || 'y' in topics && 'z' in topics")
        #expect(d.matches(["x"]))
        #expect(!d.matches(["y"]))
        #expect(d.matches(["y", "z"]))
    }

    @Test func badConditionsAreRefused() {
        for text in ["", "'a'", "'a' in topics &&", "('a' in topics", "'a b' in topics", "a in topics",
                     "'1' in topics && '2' in topics && '3' in topics && '4' in topics && '5' in topics && '6' in topics"] {
            #expect(throws: TopicCondition.Invalid.self, "\(text)") { try TopicCondition(text) }
        }
        #expect(FCMTopic.name("/topics/news") == "news")
        #expect(FCMTopic.name("news~1.%2") == "news~1.%2")
        #expect(FCMTopic.name("/topics/") == nil)
        #expect(FCMTopic.name("a b") == nil)
    }

    // MARK: Deliveries

    /// Real Beiwe's survey push for an Android device: everything in `android.data`.
    @Test func androidDataOverridesMessageData() throws {
        let message = Message(token: "t", data: ["type": "old", "k": "v"],
                              android: .init(priority: "high", data: ["type": "survey", "survey_ids": "[\"s1\"]"]))
        let delivery = try FCMDelivery.android(message)
        #expect(delivery.payload == .object(["type": "survey", "k": "v", "survey_ids": "[\"s1\"]"]))
        #expect(delivery.priority == 10)
        #expect(delivery.pushType == "background")
    }

    @Test func androidNotificationFieldsOverrideTheMessages() throws {
        let message = Message(token: "t", data: nil, notification: .init(title: "T", body: "B"),
                              android: .init(ttl: "60s", collapseKey: "k", priority: "normal", notification: .object(["title": "A", "icon": "i"])))
        let delivery = try FCMDelivery.android(message)
        #expect(delivery.payload == .object(["notification": .object(["title": "A", "body": "B", "icon": "i"])]))
        #expect(delivery.pushType == "alert" && delivery.priority == 5 && delivery.collapseID == "k" && delivery.ttlSeconds == 60)
        #expect(throws: FCMDelivery.Invalid.self) { try FCMDelivery.android(Message(token: "t", data: nil, android: .init(ttl: "1h"))) }
        #expect(throws: FCMDelivery.Invalid.self) { try FCMDelivery.android(Message(token: "t", data: nil, android: .init(priority: "max"))) }
    }

    /// An iOS device gets the APNs payload: data at the top, the notification as `aps.alert`, `apns.payload` over it.
    @Test func appleGetsTheAPNsPayload() throws {
        let message = Message(token: "t", data: ["survey_id": "s1"], notification: .init(title: "T", body: "B"),
                              apns: .init(headers: ["apns-priority": "5", "apns-collapse-id": "c"],
                                          payload: .object(["aps": .object(["sound": "default"]), "extra": .number(1)])))
        let delivery = try FCMDelivery.apple(message)
        #expect(delivery.payload == .object([
            "survey_id": "s1", "extra": .number(1),
            "aps": .object(["alert": .object(["title": "T", "body": "B"]), "sound": "default"]),
        ]))
        #expect(delivery.pushType == "alert" && delivery.priority == 5 && delivery.collapseID == "c")
        let background = try FCMDelivery.apple(Message(token: "t", data: nil, apns: .init(payload: .object(["aps": .object(["content-available": .number(1)])]))))
        #expect(background.pushType == "background" && background.priority == 5)
        #expect(throws: FCMDelivery.Invalid.self) {
            try FCMDelivery.apple(Message(token: "t", data: nil, apns: .init(headers: ["apns-priority": "7"])))
        }
    }

    @Test func theResolvedMessageIsThePlatforms() {
        var message = RelayMessage(id: "m", payload: ["a": "1"], priority: 10, collapseID: nil, pushType: "background", sentAt: 0,
                                   expiresAt: nil, phase: .stored)
        message.forApple = .init(payload: ["aps": .object([:])], priority: 5, collapseID: "c", pushType: "alert", expiresAt: 9)
        #expect(message.resolved(for: .android).payload == ["a": "1"])
        let apple = message.resolved(for: .ios)
        #expect(apple.payload == ["aps": .object([:])] && apple.priority == 5 && apple.collapseID == "c" && apple.expiresAt == 9)
        #expect(apple.forApple == nil)
    }

    // MARK: OAuth2

    /// A JWT-bearer assertion as google-auth makes it: RS256 over `header.claims` with the account's key.
    func assertion(_ account: JSONValue, iat: Int64, exp: Int64, kid: String? = nil, key: _RSA.Signing.PrivateKey? = nil,
                   withoutKeyID: Bool = false) throws -> String {
        guard case .object(let fields) = account, case .string(let pem)? = fields["private_key"], case .string(let id)? = fields["private_key_id"],
              case .string(let email)? = fields["client_email"], case .string(let uri)? = fields["token_uri"] else {
            throw Failure()
        }
        func part(_ value: JSONValue) -> String {
            Data(value.compactBytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = part(withoutKeyID ? .object(["alg": "RS256", "typ": "JWT"]) : .object(["alg": "RS256", "typ": "JWT", "kid": .string(kid ?? id)]))
        let claims = part(.object(["iss": .string(email), "scope": "https://www.googleapis.com/auth/cloud-platform", "aud": .string(uri),
                                   "iat": .number(Double(iat)), "exp": .number(Double(exp))]))
        let signer = try key ?? _RSA.Signing.PrivateKey(pemRepresentation: pem)
        let signature = try signer.signature(for: SHA256.hash(data: Array("\(header).\(claims)".utf8)), padding: .insecurePKCS1v1_5)
        let encoded = signature.rawRepresentation.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "\(header).\(claims).\(encoded)"
    }

    struct Failure: Error {}

    @Test func aServiceAccountsAssertionBuysATokenThatRequestsCarry() throws {
        let auth = FCMAuth()
        let account = try auth.makeServiceAccount(projectID: "p", tokenURI: "http://127.0.0.1:1/token")
        let now: Int64 = 1_800_000_000
        let issued = try auth.exchange(grantType: "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       assertion: try assertion(account, iat: now, exp: now + 3600), now: now)
        #expect(issued.expiresIn == 3599)
        #expect(auth.check(authorization: "Bearer \(issued.token)", now: now) == .valid(project: "p"))
        #expect(auth.check(authorization: "bearer \(issued.token)", now: now + 3598) == .valid(project: "p"))
        // Past its life the token is known as expired (Google's ACCESS_TOKEN_EXPIRED), not merely invalid.
        #expect(auth.check(authorization: "Bearer \(issued.token)", now: now + 3599) == .expired)
        #expect(auth.check(authorization: "Bearer nope", now: now) == .invalid)
        #expect(auth.check(authorization: "Basic abc", now: now) == .invalid)
        #expect(auth.check(authorization: nil, now: now) == .absent)
    }

    /// Issue 50: an access token expires on the relay clock (a move ages it), while the assertion that buys it is
    /// checked against real time (the client makes it from its own clock).
    @Test func accessTokensExpireOnTheRelayClock() throws {
        let auth = FCMAuth()
        let account = try auth.makeServiceAccount(projectID: "a", tokenURI: "http://127.0.0.1:1/token")
        let now: Int64 = 1_800_000_000, relayNow = now + 86_400
        let issued = try auth.exchange(grantType: "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       assertion: try assertion(account, iat: now, exp: now + 3600), now: now, relayNow: relayNow)
        #expect(auth.check(authorization: "Bearer \(issued.token)", now: relayNow + 3598) == .valid(project: "a"))
        #expect(auth.check(authorization: "Bearer \(issued.token)", now: relayNow + 3600) == .expired)
    }

    @Test func badGrantsAreRefusedAsGoogleRefusesThem() throws {
        let auth = FCMAuth()
        let account = try auth.makeServiceAccount(projectID: "p", tokenURI: "http://127.0.0.1:1/token")
        let now: Int64 = 1_800_000_000
        let grant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        func refusal(_ grantType: String?, _ assertion: String?) -> FCMAuth.GrantError? {
            do {
                _ = try auth.exchange(grantType: grantType, assertion: assertion, now: now)
                return nil
            } catch { return error }
        }
        #expect(refusal(nil, "x")?.error == "invalid_request")
        #expect(refusal("client_credentials", "x")?.error == "unsupported_grant_type")
        #expect(refusal(grant, nil)?.error == "invalid_request")
        #expect(refusal(grant, "not.a.jwt")?.error == "invalid_grant")
        // Signed by another key than the account's.
        let other = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        #expect(refusal(grant, try assertion(account, iat: now, exp: now + 3600, key: other))?.description == "Invalid JWT Signature.")
        // A key id the relay never made.
        #expect(refusal(grant, try assertion(account, iat: now, exp: now + 3600, kid: "unknown"))?.error == "invalid_grant")
        // Expired, or longer than an hour.
        #expect(refusal(grant, try assertion(account, iat: now - 7200, exp: now - 3600))?.error == "invalid_grant")
        #expect(refusal(grant, try assertion(account, iat: now, exp: now + 7200))?.error == "invalid_grant")
        // Without a key id (Google's guide shows the header as {"alg","typ"}): the issuer's keys are tried, so the
        // account's own key is taken and another is not.
        #expect(refusal(grant, try assertion(account, iat: now, exp: now + 3600, withoutKeyID: true)) == nil)
        #expect(refusal(grant, try assertion(account, iat: now, exp: now + 3600, key: other, withoutKeyID: true))?.description
                == "Invalid JWT Signature.")
    }
}
