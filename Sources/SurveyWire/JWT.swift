import Foundation

/// A compact JWS (`header.claims.signature`, base64url), read but not verified: the relay's FCM assertions and APNs
/// provider tokens. Its times are read through ``seconds(_:)``, which never traps (an `iat` of 1e300 killed the relay,
/// issue 49).
public struct JWT: Sendable {
    /// Why a token could not be read.
    public struct Failure: Error {
        /// What is wrong, for the error message.
        public var reason: String
    }

    /// The decoded header.
    public let header: [String: JSONValue]
    /// The decoded claim set.
    public let claims: [String: JSONValue]
    /// The signature's bytes.
    public let signature: [UInt8]
    /// `header.claims` as sent: what the signature covers.
    public let signedPart: Substring

    /// The largest time a NumericDate claim may hold here (2^53 seconds: every such number is an exact integer).
    public static let maxSeconds: Int64 = 1 << 53

    /// Reads `text`; throws when it is not three base64url parts whose first two are JSON objects.
    public init(_ text: String) throws(Failure) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure(reason: "not three base64url parts") }
        func object(_ part: Substring, _ name: String) throws(Failure) -> [String: JSONValue] {
            guard let bytes = JWT.base64URL(part), case .object(let members)? = try? JSONParser.parse(bytes) else {
                throw Failure(reason: "the \(name) is not a base64url JSON object")
            }
            return members
        }
        header = try object(parts[0], "header")
        claims = try object(parts[1], "claim set")
        guard let signature = JWT.base64URL(parts[2]), !signature.isEmpty else { throw Failure(reason: "the signature is not base64url") }
        self.signature = signature
        signedPart = text[text.startIndex..<parts[1].endIndex]
    }

    /// A NumericDate claim (`iat`, `exp`) as whole seconds, when it is a finite number within ±``maxSeconds``; nil
    /// for anything else, which the caller refuses.
    public func seconds(_ claim: String) -> Int64? {
        guard case .number(let value)? = claims[claim], value.isFinite, abs(value) <= Double(Self.maxSeconds) else { return nil }
        return Int64(value.rounded(.down))
    }

    /// The token of an `Authorization: Bearer <token>` value (the scheme in any case), or nil for another scheme.
    public static func bearer(_ authorization: String) -> String? {
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    /// Decodes base64url without padding (padding is accepted too).
    public static func base64URL(_ text: Substring) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
