import Foundation
import SurveyCrypto

/// Cost of Beiwe's password work: PBKDF2-HMAC-SHA1 with 1000 iterations (one registration verifies one password and
/// stores another): our path on the CPU's SHA extensions, our portable path, and OpenSSL's generic call. Usage: `crypto-benchmark [--rounds N]` (default 2000).
@main
struct CryptoBenchmark {
    static func main() throws {
        let args = CommandLine.arguments
        let rounds = args.firstIndex(of: "--rounds").flatMap { Int(args[$0 + 1]) } ?? 2000
        let password = Array(BeiwePassword.deviceHash("temporary").utf8)
        let salt = Array(Base64URL.encode(SecureRandom.bytes(16)).utf8)
        func measure(_ name: String, _ body: () throws -> Void) rethrows {
            let start = ContinuousClock.now
            for _ in 0..<rounds { try body() }
            let d = ContinuousClock.now - start
            let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
            print("\(name): \(String(format: "%.1f", seconds / Double(rounds) * 1e6)) µs per call (\(rounds) calls, \(String(format: "%.2f", seconds)) s)")
        }
        print("SHA extensions: \(PBKDF2.usesSHAExtensions ? "yes" : "no (the first line is the portable path too)")")
        try measure("PBKDF2-HMAC-SHA1 x1000, 32-byte key, default path") {
            _ = try PBKDF2.sha1(password: password, salt: salt, iterations: 1000, keyLength: 32)
        }
        let newPassword = Array("another-device-hash-of-forty-four-characters".utf8)
        try measure("two PBKDF2-HMAC-SHA1 x1000, 32-byte keys, one after the other (a registration's verify and new record)") {
            _ = try PBKDF2.sha1(password: password, salt: salt, iterations: 1000, keyLength: 32)
            _ = try PBKDF2.sha1(password: newPassword, salt: salt, iterations: 1000, keyLength: 32)
        }
        try measure("two PBKDF2-HMAC-SHA1 x1000, 32-byte keys, together (sha1Pair)") {
            _ = try PBKDF2.sha1Pair((password, salt, 32), (newPassword, salt, 32), iterations: 1000)
        }
        try measure("PBKDF2-HMAC-SHA1 x1000, 32-byte key, portable path") {
            _ = try PBKDF2.sha1(password: password, salt: salt, iterations: 1000, keyLength: 32, portable: true)
        }
        try measure("PBKDF2-HMAC-SHA1 x1000, OpenSSL PKCS5_PBKDF2_HMAC_SHA1") {
            _ = try PBKDF2.sha1Reference(password: password, salt: salt, iterations: 1000, keyLength: 32)
        }
    }
}
