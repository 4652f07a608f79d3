import Crypto
import Foundation
import SurveyWire
import Synchronization

/// APNs token-based authentication: `authorization: bearer <JWT>`, ES256 over `{"alg","kid"}.{"iss","iat"}` with the
/// provider's P-256 key (the `.p8` file). The relay learns a key's public half from `PUT /__control/apns/keys/{kid}`
/// and then checks tokens as APNs does (``ProviderAuthMode``).
package final class APNsAuth: Sendable {
    /// APNs refuses a token whose `iat` is older than an hour.
    static let tokenLifetime: Int64 = 3600

    private let keys = Mutex<[String: P256.Signing.PublicKey]>([:])
    /// The relay clock's offset (seconds ahead of real time) when each provider token was first seen, with its `iat`:
    /// a move of the relay clock (`POST /__control/clock`) ages the tokens seen before it, not those made after.
    private let firstSeen = Mutex<[String: (offset: Int64, iat: Int64)]>([:])
    /// Provider tokens remembered at most (the oldest are forgotten first; a forgotten one ages from its next use).
    static let rememberedTokens = 10_000

    package init() {}

    /// A key PEM the control API was given: the public key, or the `.p8` private key (its public half is kept).
    package struct BadKey: Error {}

    /// Registers the key `kid` (a PEM public key, or the `.p8` private key Apple issues).
    package func register(kid: String, pem: String) throws(BadKey) {
        let key: P256.Signing.PublicKey
        if let publicKey = try? P256.Signing.PublicKey(pemRepresentation: pem) {
            key = publicKey
        } else if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            key = privateKey.publicKey
        } else {
            throw BadKey()
        }
        keys.withLock { $0[kid] = key }
    }

    /// What a request's `authorization` header shows.
    package enum Credential: Equatable {
        /// No `authorization` header.
        case absent
        /// A token signed by a registered key, issued within the hour.
        case valid
        /// APNs' 403 reason: `InvalidProviderToken` or `ExpiredProviderToken`.
        case refused(String)
    }

    /// Checks an `authorization` header (`bearer <JWT>`).
    /// - Parameters:
    ///   - now: real time, Unix seconds (what the provider's `iat` is made from).
    ///   - clockOffset: how far the relay clock is ahead of real time, in seconds.
    package func check(authorization: String?, now: Int64, clockOffset: Int64 = 0) -> Credential {
        guard let authorization else { return .absent }
        guard let token = JWT.bearer(authorization), let jwt = try? JWT(token) else {
            return .refused("InvalidProviderToken")
        }
        guard jwt.header["alg"] == .string("ES256"), case .string(let kid)? = jwt.header["kid"],
              let key = keys.withLock({ $0[kid] }), jwt.signature.count == 64,
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jwt.signature),
              key.isValidSignature(signature, for: SHA256.hash(data: Array(jwt.signedPart.utf8))),
              case .string? = jwt.claims["iss"], let iat = jwt.seconds("iat") else {
            return .refused("InvalidProviderToken")
        }
        let seenAt = firstSeen.withLock { seen -> Int64 in
            if let known = seen[token] { return known.offset }
            if seen.count >= Self.rememberedTokens, let oldest = seen.min(by: { $0.value.iat < $1.value.iat })?.key { seen[oldest] = nil }
            seen[token] = (clockOffset, iat)
            return clockOffset
        }
        // Its age: real time since it was made, and every relay clock move since the relay first saw it.
        let age = (now - iat) + (clockOffset - seenAt)
        guard age < Self.tokenLifetime else { return .refused("ExpiredProviderToken") }
        return .valid
    }
}
