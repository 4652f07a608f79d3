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
        return recordText(iterations: iterations, key: key, salt: saltText)
    }

    /// Checks a sent device hash against a stored record. Malformed records never match.
    public static func verify(deviceHash: String, record: String) -> Bool {
        guard let stored = StoredRecord(record),
              let key = try? PBKDF2.sha1(password: Array(deviceHash.utf8), salt: Array(stored.salt.utf8),
                                         iterations: stored.iterations, keyLength: stored.key.count)
        else { return false }
        return constantTimeEqual(key, stored.key)
    }

    /// ``verify(deviceHash:record:)`` and ``makeRecord(deviceHash:iterations:salt:)`` at once, for a registration (it
    /// checks the sent password and stores a new one). When the stored record has `iterations` too, both PBKDF2
    /// derivations run together (``PBKDF2/sha1Pair(_:_:iterations:)``), which costs about three quarters of the two
    /// one after the other; otherwise they do run one after the other. Either way the results are those two calls'.
    /// The new record is made even when the check fails, so a wrong password costs as much as a right one.
    public static func verifyAndMakeRecord(deviceHash: String, record: String, newDeviceHash: String, iterations: Int,
                                           salt: String? = nil) throws(CryptoError) -> (matches: Bool, newRecord: String) {
        let saltText = salt ?? Base64URL.encode(SecureRandom.bytes(16))
        // A salt PBKDF2 refuses (over 1024 bytes) takes the separate calls too: `verify` answers no match for it.
        guard iterations >= 1, let stored = StoredRecord(record), stored.iterations == iterations, stored.salt.utf8.count <= 1024 else {
            return (verify(deviceHash: deviceHash, record: record), try makeRecord(deviceHash: newDeviceHash, iterations: iterations, salt: saltText))
        }
        let (key, newKey) = try PBKDF2.sha1Pair((Array(deviceHash.utf8), Array(stored.salt.utf8), stored.key.count),
                                                (Array(newDeviceHash.utf8), Array(saltText.utf8), 32), iterations: iterations)
        return (constantTimeEqual(key, stored.key), recordText(iterations: iterations, key: newKey, salt: saltText))
    }

    /// The stored form of a derived key.
    private static func recordText(iterations: Int, key: [UInt8], salt: String) -> String {
        "sha1$\(iterations)$\(Base64URL.encode(key))$\(salt)"
    }

    /// A well-formed stored record `sha1$<iterations>$<base64url key>$<salt>` (a positive count, a non-empty key).
    private struct StoredRecord {
        let iterations: Int
        let key: [UInt8]
        let salt: Substring

        init?(_ record: String) {
            let parts = record.split(separator: "$", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == "sha1", let iterations = Int(parts[1]), iterations > 0,
                  let key = Base64URL.decode(parts[2]), !key.isEmpty
            else { return nil }
            self.iterations = iterations
            self.key = key
            salt = parts[3]
        }
    }

    /// Equal bytes, compared in time that depends only on the lengths.
    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }
}
