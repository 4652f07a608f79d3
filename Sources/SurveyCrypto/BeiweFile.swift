/// Beiwe's encrypted upload file format (PROTOCOL.md §1.3).
///
/// Line 1 is `base64url(RSA_raw(ascii(base64url(aesKey))))`; every further line is
/// `base64url(iv) + ":" + base64url(AES-128-CBC-PKCS7(plaintext line))`. Lines are separated by `\n`.
public enum BeiweFile {
    /// Encrypts `lines` (each without its newline) with a fresh AES key and per-line IVs.
    public static func encrypt(lines: [String], publicKey: RSAKey) throws(CryptoError) -> String {
        var aesKey = SecureRandom.bytes(16)
        if aesKey[0] == 0 { aesKey[0] = 1 }  // Android's newAESKey avoids a leading zero byte.
        let keyLine = Base64URL.encode(try publicKey.rawEncrypt(Array(Base64URL.encode(aesKey).utf8)))
        var out = [keyLine]
        out.reserveCapacity(lines.count + 1)
        for line in lines {
            let iv = SecureRandom.bytes(16)
            let cipher = try AES128CBC.encrypt(Array(line.utf8), key: aesKey, iv: iv)
            out.append(Base64URL.encode(iv) + ":" + Base64URL.encode(cipher))
        }
        return out.joined(separator: "\n")
    }

    /// The outcome of decrypting a file: good lines in order and the index and reason of each bad one.
    public struct Decrypted: Sendable, Equatable {
        /// Plaintext lines that decrypted cleanly, in file order.
        public var lines: [String]
        /// 1-based file line numbers that failed, with the reason code.
        public var badLines: [(line: Int, code: String)] { zip(badLineNumbers, badLineCodes).map { ($0, $1) } }
        var badLineNumbers: [Int]
        var badLineCodes: [String]

        public static func == (a: Decrypted, b: Decrypted) -> Bool {
            a.lines == b.lines && a.badLineNumbers == b.badLineNumbers && a.badLineCodes == b.badLineCodes
        }
    }

    /// Decrypts a whole file. Throws when the key line is unusable (the file cannot be read at all);
    /// individual bad data lines are reported in ``Decrypted/badLines`` as Beiwe's server does.
    public static func decrypt(_ text: String, privateKey: RSAKey) throws(CryptoError) -> Decrypted {
        var rawLines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        while let last = rawLines.last, last.isEmpty { rawLines.removeLast() }
        guard let keyLine = rawLines.first, !keyLine.isEmpty else {
            throw CryptoError(code: "empty_file", message: "the file has no key line")
        }
        guard let encryptedKey = Base64URL.decode(keyLine) else {
            throw CryptoError(code: "bad_key_line", message: "line 1 is not base64url")
        }
        let keyText = try privateKey.rawDecrypt(encryptedKey)
        guard let aesKey = Base64URL.decode(String(decoding: keyText, as: UTF8.self)), aesKey.count == 16 else {
            throw CryptoError(code: "bad_key_line", message: "line 1 does not decrypt to a 16-byte AES key")
        }
        var result = Decrypted(lines: [], badLineNumbers: [], badLineCodes: [])
        for (index, line) in rawLines.enumerated().dropFirst() {
            let lineNumber = index + 1
            guard !line.isEmpty else { continue }
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let iv = Base64URL.decode(parts[0]), let cipher = Base64URL.decode(parts[1]) else {
                result.badLineNumbers.append(lineNumber); result.badLineCodes.append("malformed_line"); continue
            }
            do {
                let plain = try AES128CBC.decrypt(cipher, key: aesKey, iv: iv)
                result.lines.append(String(decoding: plain, as: UTF8.self))
            } catch {
                result.badLineNumbers.append(lineNumber); result.badLineCodes.append(error.code)
            }
        }
        return result
    }
}
