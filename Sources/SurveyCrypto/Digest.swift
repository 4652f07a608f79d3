import CFastPBKDF2
import COpenSSL

/// SHA-256 over OpenSSL.
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let input = Array(bytes)
        var length: UInt32 = 0
        let ok = input.withUnsafeBufferPointer { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) cannot fail for in-memory input")
        return digest
    }

    /// SHA-256 of the UTF-8 bytes of `text`.
    public static func hash(_ text: String) -> [UInt8] { hash(Array(text.utf8)) }
}

/// PBKDF2 key derivation (RFC 8018).
public enum PBKDF2 {
    /// PBKDF2-HMAC-SHA1, the algorithm Beiwe stores participant passwords with. The HMAC key pads are hashed once
    /// per call and each iteration continues from them in registers, on the CPU's SHA extensions when it has them
    /// (two output blocks interleaved), else on a portable compression. Several times faster than OpenSSL's generic PBKDF2.
    /// - Parameters:
    ///   - password: the secret bytes (for Beiwe, the ASCII of the device's password hash).
    ///   - salt: salt bytes (for Beiwe, the ASCII of the base64url salt text).
    ///   - iterations: iteration count, at least 1.
    ///   - keyLength: derived key length in bytes.
    ///   - portable: use the portable compression even on a CPU with SHA extensions (tests compare both paths).
    public static func sha1(
        password: some Collection<UInt8>, salt: some Collection<UInt8>, iterations: Int, keyLength: Int, portable: Bool = false
    ) throws(CryptoError) -> [UInt8] {
        let pass = Array(password), saltBytes = Array(salt)
        try checkParameters(iterations: iterations, shortestKey: keyLength, longestSalt: saltBytes.count)
        var out = [UInt8](repeating: 0, count: keyLength)
        let ok = pass.withUnsafeBufferPointer { p in
            saltBytes.withUnsafeBufferPointer { s in
                fast_pbkdf2_hmac_sha1(p.baseAddress, p.count, s.baseAddress, s.count, UInt(iterations), &out, keyLength, portable ? 1 : 0)
            }
        }
        guard ok == 1 else { throw .openssl("pbkdf2_failed", "PBKDF2") }
        return out
    }

    /// Two PBKDF2-HMAC-SHA1 derivations with one iteration count, computed together: on the SHA extensions, with keys
    /// of at most 40 bytes, their four output blocks share one instruction stream, which keeps the SHA unit busier than
    /// two derivations one after the other. The keys are exactly `sha1`'s for each input. (A registration verifies one
    /// password and stores another: both derivations at once.)
    public static func sha1Pair(
        _ first: (password: [UInt8], salt: [UInt8], keyLength: Int),
        _ second: (password: [UInt8], salt: [UInt8], keyLength: Int),
        iterations: Int
    ) throws(CryptoError) -> (first: [UInt8], second: [UInt8]) {
        try checkParameters(iterations: iterations, shortestKey: min(first.keyLength, second.keyLength),
                            longestSalt: max(first.salt.count, second.salt.count))
        var out1 = [UInt8](repeating: 0, count: first.keyLength)
        var out2 = [UInt8](repeating: 0, count: second.keyLength)
        let ok = first.password.withUnsafeBufferPointer { p1 in
            first.salt.withUnsafeBufferPointer { s1 in
                second.password.withUnsafeBufferPointer { p2 in
                    second.salt.withUnsafeBufferPointer { s2 in
                        fast_pbkdf2_hmac_sha1_pair(p1.baseAddress, p1.count, s1.baseAddress, s1.count, &out1, out1.count,
                                                   p2.baseAddress, p2.count, s2.baseAddress, s2.count, &out2, out2.count,
                                                   UInt(iterations))
                    }
                }
            }
        }
        guard ok == 1 else { throw .openssl("pbkdf2_failed", "PBKDF2") }
        return (out1, out2)
    }

    /// What the C derivation accepts: at least one iteration, keys of at least one byte, salts of at most 1024 bytes.
    private static func checkParameters(iterations: Int, shortestKey: Int, longestSalt: Int) throws(CryptoError) {
        guard iterations >= 1, shortestKey >= 1 else {
            throw CryptoError(code: "invalid_parameter", message: "iterations and key length must be positive")
        }
        guard longestSalt <= 1024 else {
            throw CryptoError(code: "invalid_parameter", message: "salt longer than 1024 bytes")
        }
    }

    /// Whether `sha1` runs on the CPU's SHA extensions here.
    public static var usesSHAExtensions: Bool { fast_pbkdf2_uses_sha_extensions() == 1 }

    /// PBKDF2-HMAC-SHA1 through OpenSSL's generic `PKCS5_PBKDF2_HMAC_SHA1` (the reference the fast path is tested against).
    public static func sha1Reference(
        password: some Collection<UInt8>, salt: some Collection<UInt8>, iterations: Int, keyLength: Int
    ) throws(CryptoError) -> [UInt8] {
        let pass = Array(password), saltBytes = Array(salt)
        var out = [UInt8](repeating: 0, count: keyLength)
        let ok = pass.withUnsafeBufferPointer { p in
            saltBytes.withUnsafeBufferPointer { s in
                p.withMemoryRebound(to: CChar.self) { pc in
                    PKCS5_PBKDF2_HMAC_SHA1(pc.baseAddress, Int32(pc.count), s.baseAddress, Int32(s.count),
                                           Int32(iterations), Int32(keyLength), &out)
                }
            }
        }
        guard ok == 1 else { throw .openssl("pbkdf2_failed", "PBKDF2") }
        return out
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = RAND_bytes(&out, Int32(count))
        precondition(ok == 1, "RAND_bytes failed: \(OpenSSLErrors.drain())")
        return out
    }
}
