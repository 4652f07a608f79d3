import Foundation
import Testing
@testable import SurveyCrypto

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var chars = Array(hex)
    while chars.count >= 2 { out.append(UInt8(String(chars[0..<2]), radix: 16)!); chars.removeFirst(2) }
    return out
}

@Suite struct PBKDF2Tests {
    // RFC 6070 §2.
    @Test(arguments: [
        ("password", "salt", 1, 20, "0c60c80f961f0e71f3a9b524af6012062fe037a6"),
        ("password", "salt", 2, 20, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"),
        ("password", "salt", 4096, 20, "4b007901b765489abead49d926f721d065a429c1"),
        ("passwordPASSWORDpassword", "saltSALTsaltSALTsaltSALTsaltSALTsalt", 4096, 25, "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"),
        ("pass\u{0}word", "sa\u{0}lt", 4096, 16, "56fa6aa75548099dcc37d7f03425e0c3"),
    ])
    func rfc6070Vectors(password: String, salt: String, iterations: Int, length: Int, expected: String) throws {
        for portable in [false, true] {
            let key = try PBKDF2.sha1(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations, keyLength: length,
                                      portable: portable)
            #expect(hex(key) == expected, "portable: \(portable)")
        }
    }

    @Test func bothPathsMatchOpenSSLsGenericPBKDF2() throws {
        // Passwords longer than the 64-byte HMAC block are hashed first; one, two (interleaved) and three output
        // blocks (a lone last block); odd lengths. On a CPU without SHA extensions both runs take the portable path.
        for (passLength, saltLength, iterations, length) in [(0, 0, 1, 20), (64, 16, 3, 32), (65, 24, 7, 41), (200, 1024, 2, 64),
                                                             (44, 24, 1000, 32), (44, 24, 999, 20), (10, 5, 17, 60), (1, 1, 2, 1)] {
            let pass = (0..<passLength).map { UInt8(($0 * 7 + 3) % 256) }
            let salt = (0..<saltLength).map { UInt8(($0 * 13 + 1) % 256) }
            let reference = try PBKDF2.sha1Reference(password: pass, salt: salt, iterations: iterations, keyLength: length)
            for portable in [false, true] {
                #expect(try PBKDF2.sha1(password: pass, salt: salt, iterations: iterations, keyLength: length, portable: portable) == reference,
                        "pass \(passLength) salt \(saltLength) iterations \(iterations) length \(length) portable \(portable)")
            }
        }
        #expect(throws: CryptoError.self) { try PBKDF2.sha1(password: [1], salt: [UInt8](repeating: 0, count: 1025), iterations: 1, keyLength: 20) }
    }

    /// Two derivations computed together give exactly what two separate calls give: one and two output blocks each,
    /// more than two (the pair runs them one after the other), long passwords, different salts and lengths per side.
    @Test func aPairMatchesTwoSeparateDerivations() throws {
        let cases: [(Int, Int, Int, Int, Int, Int, Int)] = [
            (44, 24, 32, 44, 24, 32, 1000), (0, 0, 20, 65, 16, 40, 3), (200, 1024, 1, 10, 5, 41, 2), (64, 8, 64, 1, 1, 20, 7),
            (5, 3, 40, 70, 1, 21, 1),
        ]
        for (pass1Length, salt1Length, length1, pass2Length, salt2Length, length2, iterations) in cases {
            let pass1 = (0..<pass1Length).map { UInt8(($0 * 7 + 3) % 256) }, salt1 = (0..<salt1Length).map { UInt8(($0 * 13 + 1) % 256) }
            let pass2 = (0..<pass2Length).map { UInt8(($0 * 11 + 5) % 256) }, salt2 = (0..<salt2Length).map { UInt8(($0 * 3 + 2) % 256) }
            let pair = try PBKDF2.sha1Pair((pass1, salt1, length1), (pass2, salt2, length2), iterations: iterations)
            #expect(pair.first == (try PBKDF2.sha1Reference(password: pass1, salt: salt1, iterations: iterations, keyLength: length1)),
                    "first of \((pass1Length, salt1Length, length1, pass2Length, salt2Length, length2, iterations))")
            #expect(pair.second == (try PBKDF2.sha1Reference(password: pass2, salt: salt2, iterations: iterations, keyLength: length2)),
                    "second of \((pass1Length, salt1Length, length1, pass2Length, salt2Length, length2, iterations))")
        }
        #expect(throws: CryptoError.self) { try PBKDF2.sha1Pair(([1], [2], 20), ([1], [2], 20), iterations: 0) }
        #expect(throws: CryptoError.self) { try PBKDF2.sha1Pair(([1], [2], 20), ([1], [UInt8](repeating: 0, count: 1025), 20), iterations: 1) }
    }

    @Test func rejectsZeroIterations() {
        #expect(throws: CryptoError.self) { try PBKDF2.sha1(password: [1], salt: [2], iterations: 0, keyLength: 32) }
    }
}

@Suite struct AESTests {
    // NIST SP 800-38A F.2.1 (CBC-AES128.Encrypt): our output adds one PKCS#7 block after the NIST ciphertext.
    let key = bytes(hex: "2b7e151628aed2a6abf7158809cf4f3c")
    let iv = bytes(hex: "000102030405060708090a0b0c0d0e0f")
    let plaintext = bytes(hex: "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
    let ciphertext = "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b273bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7"

    @Test func nistCBCVector() throws {
        let out = try AES128CBC.encrypt(plaintext, key: key, iv: iv)
        #expect(out.count == 80)
        #expect(hex(Array(out.prefix(64))) == ciphertext)
        #expect(try AES128CBC.decrypt(out, key: key, iv: iv) == plaintext)
    }

    @Test func wrongKeyFailsPaddingCheckOrGarbles() throws {
        let out = try AES128CBC.encrypt(Array("hello".utf8), key: key, iv: iv)
        var wrong = key
        wrong[0] ^= 1
        let result = try? AES128CBC.decrypt(out, key: wrong, iv: iv)
        #expect(result != Array("hello".utf8))
    }

    @Test func rejectsBadSizes() {
        #expect(throws: CryptoError.self) { try AES128CBC.encrypt([1], key: [1, 2], iv: iv) }
        #expect(throws: CryptoError.self) { try AES128CBC.decrypt([1, 2, 3], key: key, iv: iv) }
    }
}

@Suite struct DigestAndEncodingTests {
    @Test func sha256OfABC() {
        #expect(hex(SHA256.hash("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func beiweDeviceHashKeepsPadding() {
        #expect(BeiwePassword.deviceHash("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0=")
    }

    @Test func passwordRecordMatchesPythonsPBKDF2() throws {
        // Computed with hashlib.pbkdf2_hmac('sha1', device_hash, salt, 1000, 32), as Beiwe's server does.
        let record = try BeiwePassword.makeRecord(deviceHash: BeiwePassword.deviceHash("temp1234"), iterations: 1000, salt: "AAAAAAAAAAAAAAAAAAAAAA==")
        #expect(record == "sha1$1000$pePHEH61dqJtCZZKk6agaN13gA58H5fc58aCwJrjKtA=$AAAAAAAAAAAAAAAAAAAAAA==")
        #expect(BeiwePassword.verify(deviceHash: BeiwePassword.deviceHash("temp1234"), record: record))
        #expect(!BeiwePassword.verify(deviceHash: BeiwePassword.deviceHash("temp1235"), record: record))
        #expect(!BeiwePassword.verify(deviceHash: "x", record: "sha1$notanumber$a$b"))
    }

    /// A registration's check and new record together are the two separate calls: right and wrong passwords, a stored
    /// record with another iteration count (computed one after the other), and malformed records (never match).
    @Test func verifyAndMakeRecordIsVerifyThenMakeRecord() throws {
        let sent = BeiwePassword.deviceHash("temp1234"), newHash = BeiwePassword.deviceHash("new-secret")
        let salt = "AAAAAAAAAAAAAAAAAAAAAA=="
        for storedIterations in [1000, 999] {
            let stored = try BeiwePassword.makeRecord(deviceHash: sent, iterations: storedIterations, salt: "c2FsdHNhbHRzYWx0c2FsdA==")
            for (hash, matches) in [(sent, true), (BeiwePassword.deviceHash("temp1235"), false)] {
                let result = try BeiwePassword.verifyAndMakeRecord(deviceHash: hash, record: stored, newDeviceHash: newHash, iterations: 1000, salt: salt)
                #expect(result.matches == matches, "stored with \(storedIterations)")
                #expect(result.matches == BeiwePassword.verify(deviceHash: hash, record: stored))
                #expect(result.newRecord == (try BeiwePassword.makeRecord(deviceHash: newHash, iterations: 1000, salt: salt)))
                #expect(BeiwePassword.verify(deviceHash: newHash, record: result.newRecord))
            }
        }
        let longSalt = "sha1$1000$pePHEH61dqJtCZZKk6agaN13gA58H5fc58aCwJrjKtA=$" + String(repeating: "s", count: 1025)
        for malformed in ["sha1$notanumber$a$b", "sha1$1000$$AAAA", "md5$1000$AAAA$AAAA", "", longSalt] {
            #expect(!(try BeiwePassword.verifyAndMakeRecord(deviceHash: sent, record: malformed, newDeviceHash: newHash, iterations: 1000)).matches)
        }
    }

    @Test func base64URLRoundTripsAndAcceptsMissingPadding() {
        for length in 0..<40 {
            let data = (0..<length).map { UInt8(($0 * 37 + 11) % 256) }
            let text = Base64URL.encode(data)
            #expect(!text.contains("+") && !text.contains("/"))
            #expect(text.count % 4 == 0)
            #expect(Base64URL.decode(text) == data)
            #expect(Base64URL.decode(text.replacingOccurrences(of: "=", with: "")) == data)
        }
        #expect(Base64URL.decode("ab$d") == nil)
        #expect(Base64URL.decode("a") == nil)
    }

    @Test func randomBytesDiffer() {
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
        #expect(SecureRandom.bytes(7).count == 7)
    }
}

@Suite struct RSATests {
    @Test func generatedKeyExportsSubjectPublicKeyInfo() throws {
        let key = try RSAKey.generate(bits: 2048)
        let der = key.publicKeyDER()
        #expect(Data(der).base64EncodedString().hasPrefix("MIIBI"))
        let imported = try RSAKey(publicKeyDER: der)
        #expect(imported.modulusBytes == 256)
        #expect(!imported.isPrivate)
        let reloaded = try RSAKey(privateKeyDER: try key.privateKeyDER())
        #expect(reloaded.publicKeyDER() == der)
    }

    @Test func rawRoundTripStripsLeadingZeros() throws {
        let key = try RSAKey.generate(bits: 2048)
        let message = Array("AQIDBAUGBwgJCgsMDQ4PEA==".utf8)
        let cipher = try RSAKey(publicKeyDER: key.publicKeyDER()).rawEncrypt(message)
        #expect(cipher.count == 256)
        #expect(try key.rawDecrypt(cipher) == message)
        #expect(throws: CryptoError.self) { try RSAKey(publicKeyDER: key.publicKeyDER()).rawDecrypt(cipher) }
    }

    @Test func rejectsGarbageKeys() {
        #expect(throws: CryptoError.self) { try RSAKey(publicKeyDER: [1, 2, 3]) }
        #expect(throws: CryptoError.self) { try RSAKey(privateKeyDER: []) }
    }
}

@Suite struct BeiweFileTests {
    @Test func decryptsAFileMadeByAnIndependentImplementation() throws {
        let key = try RSAKey(privateKeyDER: [UInt8](Data(base64Encoded: PythonVectors.privateKeyDER)!))
        let result = try BeiweFile.decrypt(PythonVectors.beiweFile, privateKey: key)
        #expect(result.lines == ["question id,question type,question text,question answer options,answer", "q1,free_response,How?,,fine"])
        #expect(result.badLines.isEmpty)
    }

    @Test func roundTripWithFreshKeys() throws {
        let key = try RSAKey(privateKeyDER: [UInt8](Data(base64Encoded: PythonVectors.privateKeyDER)!))
        let publicKey = try RSAKey(publicKeyDER: [UInt8](Data(base64Encoded: PythonVectors.publicKeyDER)!))
        let lines = ["a,b,c", "ünïcödé, with \"quotes\"", ""]
        let text = try BeiweFile.encrypt(lines: lines, publicKey: publicKey)
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == 4)
        // An empty plaintext line still encrypts to one block, so it survives the round trip.
        #expect(try BeiweFile.decrypt(text, privateKey: key).lines == lines)
    }

    @Test func corruptDataLinesAreReportedNotFatal() throws {
        let key = try RSAKey(privateKeyDER: [UInt8](Data(base64Encoded: PythonVectors.privateKeyDER)!))
        var lines = PythonVectors.beiweFile.split(separator: "\n").map(String.init)
        lines[1] = "not-base64:???"
        lines.append(String(lines[2].dropLast(8)) + "AAAAAAA=")
        let result = try BeiweFile.decrypt(lines.joined(separator: "\n"), privateKey: key)
        #expect(result.lines == ["q1,free_response,How?,,fine"])
        #expect(result.badLines.map(\.line) == [2, 4])
    }

    @Test func unusableKeyLineThrows() throws {
        let key = try RSAKey(privateKeyDER: [UInt8](Data(base64Encoded: PythonVectors.privateKeyDER)!))
        #expect(throws: CryptoError.self) { try BeiweFile.decrypt("", privateKey: key) }
        #expect(throws: CryptoError.self) { try BeiweFile.decrypt("%%%\nabc:def", privateKey: key) }
        let other = try RSAKey.generate(bits: 2048)
        #expect(throws: CryptoError.self) { try BeiweFile.decrypt(PythonVectors.beiweFile, privateKey: other) }
    }
}

@Suite struct RSASigningTests {
    @Test func rs256MatchesPythonsCryptography() throws {
        let key = try RSAKey(privateKeyPEM: PythonVectors.privateKeyPEM)
        let signature = try key.signSHA256(Array(PythonVectors.signedText.utf8))
        #expect(signature == [UInt8](Data(base64Encoded: PythonVectors.rs256Signature)!))
        // The PEM is the same key as the DER vector.
        let fromDER = try RSAKey(privateKeyDER: [UInt8](Data(base64Encoded: PythonVectors.privateKeyDER)!))
        #expect(fromDER.publicKeyDER() == key.publicKeyDER())
    }

    @Test func refusesWhatIsNotAPrivateKey() throws {
        #expect(throws: CryptoError.self) { try RSAKey(privateKeyPEM: "") }
        #expect(throws: CryptoError.self) { try RSAKey(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----") }
        let publicOnly = try RSAKey(publicKeyDER: [UInt8](Data(base64Encoded: PythonVectors.publicKeyDER)!))
        #expect(throws: CryptoError.self) { try publicOnly.signSHA256([1, 2, 3]) }
    }
}
