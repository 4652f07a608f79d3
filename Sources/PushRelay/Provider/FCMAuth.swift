import Crypto
import Foundation
import SurveyWire
import Synchronization
import _CryptoExtras

/// FCM's side of Google OAuth2, as firebase-admin (through google-auth) uses it: a service account JSON whose
/// `token_uri` is the relay's `POST /token`, a JWT-bearer grant signed with the account's key (RS256), and the access
/// tokens issued for it, which `messages:send` and the topic routes check (``ProviderAuthMode``).
///
/// Service accounts are made by the relay (`GET /__control/fcm/service-account.json`): it keeps each one's public key
/// under the key's id, so an assertion is verified as Google verifies it, by signature. State is in memory: a
/// restarted relay knows no account and no token (as if the keys had been revoked).
package final class FCMAuth: Sendable {
    /// How long an access token lives (Google: one hour, `expires_in` 3599).
    static let tokenLifetime: Int64 = 3599
    /// How far an assertion's `iat` may be ahead of the relay's clock (Google allows a little skew).
    static let clockSkew: Int64 = 300

    private struct State {
        /// Public keys of the service accounts this relay made (or, in lenient mode, took on trust), by key id, with the
        /// account's project.
        var keys: [String: (email: String, key: _RSA.Signing.PublicKey, project: String)] = [:]
        /// Access tokens issued: when they expire on the relay clock (Unix seconds) and the project they act for.
        var tokens: [String: (expires: Int64, project: String)] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    // MARK: Service accounts

    /// A new service account for `projectID` (a fresh 2048-bit RSA key), as the JSON file Firebase's console gives,
    /// with `token_uri` set to `tokenURI`.
    package func makeServiceAccount(projectID: String, tokenURI: String) throws -> JSONValue {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let keyID = RandomHex.secret(20)
        let email = "firebase-adminsdk-relay@\(projectID).iam.gserviceaccount.com"
        state.withLock { $0.keys[keyID] = (email, key.publicKey, projectID) }
        return .object([
            "type": "service_account",
            "project_id": .string(projectID),
            "private_key_id": .string(keyID),
            "private_key": .string(key.pkcs8PEMRepresentation + "\n"),
            "client_email": .string(email),
            "client_id": .string(String(UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999))),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(tokenURI),
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": .string("https://www.googleapis.com/robot/v1/metadata/x509/\(email)"),
            "universe_domain": "googleapis.com",
        ])
    }

    // MARK: The token endpoint

    /// A refused grant: Google's OAuth2 error (`{"error", "error_description"}`, 400).
    package struct GrantError: Error, Equatable {
        package var error: String
        package var description: String
    }

    /// An issued access token.
    package struct AccessToken: Equatable {
        package var token: String
        package var expiresIn: Int64
    }

    /// Exchanges a JWT-bearer grant (the form fields of `POST /token`) for an access token.
    /// - Parameters:
    ///   - now: real time, Unix seconds: the assertion's `iat` and `exp` are the client's, made from real time.
    ///   - relayNow: the relay clock, Unix seconds: the access token expires an hour from it, so a move of the relay
    ///     clock (`POST /__control/clock`) ages it.
    /// - Parameter lenient: `--provider-auth lenient`: an assertion signed by a key the relay did not make (a user's own
    ///   service-account file) is taken on trust for the project its issuer names (`...@PROJECT.iam.gserviceaccount.com`).
    package func exchange(grantType: String?, assertion: String?, now: Int64, relayNow: Int64? = nil,
                          lenient: Bool = false) throws(GrantError) -> AccessToken {
        guard let grantType else { throw GrantError(error: "invalid_request", description: "Missing required parameter: grant_type") }
        guard grantType == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            throw GrantError(error: "unsupported_grant_type", description: "Invalid grant_type: \(grantType)")
        }
        guard let assertion, !assertion.isEmpty else { throw GrantError(error: "invalid_request", description: "Missing required parameter: assertion") }
        let jwt: JWT
        do {
            jwt = try JWT(assertion)
        } catch {
            throw GrantError(error: "invalid_grant", description: "Invalid JWT: \(error.reason)")
        }
        guard jwt.header["alg"] == .string("RS256") else { throw GrantError(error: "invalid_grant", description: "Invalid JWT: alg must be RS256") }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: jwt.signature)
        let digest = SHA256.hash(data: Array(jwt.signedPart.utf8))
        // The keys that may have signed it: the one its key id names or, without one, its issuer's (Google documents
        // the server-to-server header as {"alg", "typ"}; a Java or Go program signing by hand sends no key id).
        let candidates = state.withLock { state in
            if let keyID = jwt.header["kid"]?.stringValue { return state.keys[keyID].map { [$0] } ?? [] }
            guard let issuer = jwt.claims["iss"]?.stringValue else { return [] }
            return state.keys.values.filter { $0.email == issuer }
        }
        let project: String
        if !candidates.isEmpty {
            guard let (email, _, owner) = candidates.first(where: { $0.key.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5) }) else {
                throw GrantError(error: "invalid_grant", description: "Invalid JWT Signature.")
            }
            guard jwt.claims["iss"] == .string(email) else { throw GrantError(error: "invalid_grant", description: "Invalid issuer: \(email) expected") }
            project = owner
        } else if lenient, let issuer = jwt.claims["iss"]?.stringValue, let owner = Self.project(ofServiceAccount: issuer) {
            project = owner
        } else {
            throw GrantError(error: "invalid_grant", description: "Invalid JWT Signature.")
        }
        guard let iat = jwt.seconds("iat"), let exp = jwt.seconds("exp") else {
            throw GrantError(error: "invalid_grant", description: "Invalid JWT: iat and exp are required (as seconds since 1970)")
        }
        guard iat <= now + Self.clockSkew, exp > now, exp - iat <= 3600 else {
            throw GrantError(error: "invalid_grant",
                             description: "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let token = "ya29.relay-" + RandomHex.secret(40)
        let issuedAt = relayNow ?? now
        state.withLock { state in
            // Tokens expired more than a day ago are forgotten (a later use is then merely invalid, not expired).
            state.tokens = state.tokens.filter { $0.value.expires > issuedAt - 86_400 }
            state.tokens[token] = (issuedAt + Self.tokenLifetime, project)
        }
        return AccessToken(token: token, expiresIn: Self.tokenLifetime)
    }

    /// The project of a service account's email (`name@PROJECT.iam.gserviceaccount.com`), or nil for another address.
    static func project(ofServiceAccount email: String) -> String? {
        let suffix = ".iam.gserviceaccount.com"
        guard email.hasSuffix(suffix), let at = email.firstIndex(of: "@") else { return nil }
        let project = email[email.index(after: at)..<email.index(email.endIndex, offsetBy: -suffix.count)]
        return project.isEmpty ? nil : String(project)
    }

    // MARK: Checking a request

    /// What a request's `Authorization` header shows.
    package enum Credential: Equatable {
        /// No `Authorization` header.
        case absent
        /// A bearer token this relay issued, not expired, acting for `project`.
        case valid(project: String)
        /// A bearer token this relay issued that has expired on the relay clock (Google's `ACCESS_TOKEN_EXPIRED`).
        case expired
        /// Something else: not a bearer token, or unknown.
        case invalid
    }

    /// Checks an `Authorization` header against the tokens issued; `now` is the relay clock, Unix seconds.
    package func check(authorization: String?, now: Int64) -> Credential {
        guard let authorization else { return .absent }
        guard let token = JWT.bearer(authorization) else { return .invalid }
        guard let issued = state.withLock({ $0.tokens[token] }) else { return .invalid }
        return issued.expires > now ? .valid(project: issued.project) : .expired
    }
}
