import Foundation
import SurveyCrypto

/// Cost of Beiwe's password work: PBKDF2-HMAC-SHA1 with 1000 iterations (one registration verifies one password and
/// stores another), fast path vs OpenSSL's generic call. Usage: `crypto-benchmark [--rounds N]` (default 2000).
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
        try measure("PBKDF2-HMAC-SHA1 x1000, fast path") {
            _ = try PBKDF2.sha1(password: password, salt: salt, iterations: 1000, keyLength: 32)
        }
        try measure("PBKDF2-HMAC-SHA1 x1000, OpenSSL PKCS5_PBKDF2_HMAC_SHA1") {
            _ = try PBKDF2.sha1Reference(password: password, salt: salt, iterations: 1000, keyLength: 32)
        }
    }
}
