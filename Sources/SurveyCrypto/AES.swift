import COpenSSL

/// AES-128 in CBC mode with PKCS#7 padding, as in Beiwe's upload file format.
public enum AES128CBC {
    /// Encrypts `plaintext` with a 16-byte key and IV; the result is padded to a multiple of 16 bytes.
    public static func encrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(plaintext, key: key, iv: iv, encrypt: true)
    }

    /// Decrypts and removes PKCS#7 padding. Throws `bad_padding` when the padding is wrong
    /// (wrong key, corrupt or truncated data).
    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw CryptoError(code: "bad_length", message: "ciphertext length \(ciphertext.count) is not a positive multiple of 16")
        }
        return try run(ciphertext, key: key, iv: iv, encrypt: false)
    }

    private static func run(_ input: [UInt8], key: [UInt8], iv: [UInt8], encrypt: Bool) throws(CryptoError) -> [UInt8] {
        guard key.count == 16 else { throw CryptoError(code: "invalid_key", message: "AES-128 needs a 16-byte key, got \(key.count)") }
        guard iv.count == 16 else { throw CryptoError(code: "invalid_iv", message: "CBC needs a 16-byte IV, got \(iv.count)") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .openssl("cipher_failed", "EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let enc: Int32 = encrypt ? 1 : 0
        guard EVP_CipherInit_ex(ctx, EVP_aes_128_cbc(), nil, key, iv, enc) == 1 else {
            throw .openssl("cipher_failed", "EVP_CipherInit_ex")
        }
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        guard EVP_CipherUpdate(ctx, &out, &written, input, Int32(input.count)) == 1 else {
            throw .openssl("cipher_failed", "EVP_CipherUpdate")
        }
        var final: Int32 = 0
        let finalOK = out.withUnsafeMutableBufferPointer { buffer in
            EVP_CipherFinal_ex(ctx, buffer.baseAddress! + Int(written), &final)
        }
        guard finalOK == 1 else {
            _ = OpenSSLErrors.drain()
            throw CryptoError(code: "bad_padding", message: "AES-CBC padding check failed (wrong key or corrupt data)")
        }
        return Array(out.prefix(Int(written + final)))
    }
}
