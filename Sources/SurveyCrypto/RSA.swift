import COpenSSL

/// An RSA key held by OpenSSL. Public-only keys can encrypt; full keys can also decrypt.
///
/// `@unchecked Sendable` is safe: the `EVP_PKEY` is never mutated after it is created, and every operation
/// makes its own `EVP_PKEY_CTX`, which OpenSSL 3 documents as the way to share one key across threads.
public final class RSAKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// True when the key holds the private half.
    public let isPrivate: Bool

    private init(pkey: OpaquePointer, isPrivate: Bool) {
        self.pkey = pkey
        self.isPrivate = isPrivate
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a new RSA key pair (public exponent 65537).
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAKey {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else { throw .openssl("keygen_failed", "EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1 else {
            throw .openssl("keygen_failed", "RSA keygen setup")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(ctx, &key) == 1, let key else { throw .openssl("keygen_failed", "EVP_PKEY_keygen") }
        return RSAKey(pkey: key, isPrivate: true)
    }

    /// Imports a public key from DER-encoded X.509 SubjectPublicKeyInfo (what Beiwe's `client_public_key` holds).
    public convenience init(publicKeyDER der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &p, buffer.count)
        }
        guard let key, EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            _ = OpenSSLErrors.drain()
            throw CryptoError(code: "invalid_key", message: "not a DER SubjectPublicKeyInfo RSA public key")
        }
        self.init(pkey: key, isPrivate: false)
    }

    /// Imports a private key from DER (PKCS#1 or PKCS#8), as exported by ``privateKeyDER()``.
    public convenience init(privateKeyDER der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &p, buffer.count)
        }
        guard let key, EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            _ = OpenSSLErrors.drain()
            throw CryptoError(code: "invalid_key", message: "not a DER RSA private key")
        }
        self.init(pkey: key, isPrivate: true)
    }

    /// Imports a private key from PEM (`-----BEGIN PRIVATE KEY-----`, PKCS#8, as in a Google service-account JSON's
    /// `private_key`, or `-----BEGIN RSA PRIVATE KEY-----`, PKCS#1).
    public convenience init(privateKeyPEM pem: String) throws(CryptoError) {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.filter { !$0.isWhitespace } }
        let body = lines.filter { !$0.isEmpty && !$0.hasPrefix("-----") }.joined()
        guard lines.contains(where: { $0.hasPrefix("-----BEGIN") && $0.hasSuffix("PRIVATEKEY-----") }),
              let der = Base64URL.decode(body), !der.isEmpty else {
            throw CryptoError(code: "invalid_key", message: "not a PEM RSA private key")
        }
        try self.init(privateKeyDER: der)
    }

    /// Modulus size in bytes (256 for RSA-2048).
    public var modulusBytes: Int { Int(EVP_PKEY_get_size(pkey)) }

    /// DER X.509 SubjectPublicKeyInfo of the public half.
    public func publicKeyDER() -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        precondition(length > 0, "i2d_PUBKEY failed")
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_PUBKEY(pkey, &p)
        }
        return out
    }

    /// DER of the private key (traditional PKCS#1 form). Only for keys with ``isPrivate``.
    public func privateKeyDER() throws(CryptoError) -> [UInt8] {
        guard isPrivate else { throw CryptoError(code: "not_private", message: "this key has no private half") }
        let length = i2d_PrivateKey(pkey, nil)
        guard length > 0 else { throw .openssl("export_failed", "i2d_PrivateKey") }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_PrivateKey(pkey, &p)
        }
        return out
    }

    /// Raw RSA (no padding): `m^e mod n`. The message is read as a big-endian number and left-padded
    /// with zero bytes to the modulus size; it must be shorter than the modulus.
    public func rawEncrypt(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let size = modulusBytes
        guard message.count <= size else {
            throw CryptoError(code: "message_too_long", message: "\(message.count) bytes do not fit a \(size)-byte modulus")
        }
        let padded = [UInt8](repeating: 0, count: size - message.count) + message
        return try transform(padded, encrypt: true)
    }

    /// Raw RSA private operation: `c^d mod n`, with leading zero bytes stripped (as Beiwe's server does).
    public func rawDecrypt(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard isPrivate else { throw CryptoError(code: "not_private", message: "decryption needs the private key") }
        let size = modulusBytes
        guard ciphertext.count <= size, !ciphertext.isEmpty else {
            throw CryptoError(code: "bad_length", message: "RSA block of \(ciphertext.count) bytes for a \(size)-byte modulus")
        }
        let padded = [UInt8](repeating: 0, count: size - ciphertext.count) + ciphertext
        let plain = try transform(padded, encrypt: false)
        return Array(plain.drop { $0 == 0 })
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message` (JWT's `RS256`). Only for keys with ``isPrivate``.
    public func signSHA256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard isPrivate else { throw CryptoError(code: "not_private", message: "signing needs the private key") }
        guard let ctx = EVP_MD_CTX_new() else { throw .openssl("sign_failed", "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { throw .openssl("sign_failed", "EVP_DigestSignInit") }
        var length = modulusBytes
        var out = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &out, &length, message, message.count) == 1 else { throw .openssl("sign_failed", "EVP_DigestSign") }
        return Array(out.prefix(length))
    }

    private func transform(_ input: [UInt8], encrypt: Bool) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else { throw .openssl("rsa_failed", "EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(ctx) }
        let initOK = encrypt ? EVP_PKEY_encrypt_init(ctx) : EVP_PKEY_decrypt_init(ctx)
        guard initOK == 1, EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING) == 1 else {
            throw .openssl("rsa_failed", "RSA setup")
        }
        var outLength = modulusBytes
        var out = [UInt8](repeating: 0, count: outLength)
        let ok = encrypt
            ? EVP_PKEY_encrypt(ctx, &out, &outLength, input, input.count)
            : EVP_PKEY_decrypt(ctx, &out, &outLength, input, input.count)
        guard ok == 1 else {
            // Raw RSA rejects inputs numerically >= the modulus.
            throw .openssl("rsa_failed", encrypt ? "RSA encrypt" : "RSA decrypt")
        }
        return Array(out.prefix(outLength))
    }
}
