/// Beiwe's password scheme (PROTOCOL.md §1): the device hash and the server's PBKDF2 record.
public enum BeiwePassword {
    /// What a device sends as `password`: `base64url(sha256(utf8(plaintext)))` with `=` padding.
    public static func deviceHash(_ plaintext: String) -> String {
        Base64URL.encode(SHA256.hash(plaintext))
    }

    /// The stored form `sha1$<iterations>$<base64url hash>$<salt>` for a device hash.
    /// The salt is the base64url text of 16 random bytes, used as ASCII.
    public static func makeRecord(deviceHash: String, iterations: Int, salt: String? = nil) throws(CryptoError) -> String {
        let saltText = salt ?? Base64URL.encode(SecureRandom.bytes(16))
        let key = try PBKDF2.sha1(password: Array(deviceHash.utf8), salt: Array(saltText.utf8), iterations: iterations, keyLength: 32)
        return "sha1$\(iterations)$\(Base64URL.encode(key))$\(saltText)"
    }

    /// Checks a sent device hash against a stored record. Malformed records never match.
    public static func verify(deviceHash: String, record: String) -> Bool {
        let parts = record.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "sha1", let iterations = Int(parts[1]), iterations > 0,
              let expected = Base64URL.decode(parts[2])
        else { return false }
        guard let key = try? PBKDF2.sha1(password: Array(deviceHash.utf8), salt: Array(parts[3].utf8),
                                         iterations: iterations, keyLength: expected.count)
        else { return false }
        // Constant-time comparison.
        guard key.count == expected.count else { return false }
        var diff: UInt8 = 0
        for (a, b) in zip(key, expected) { diff |= a ^ b }
        return diff == 0
    }
}
