import Foundation

/// Identifier helpers.
enum Identifiers {
    /// 24 lowercase hex characters, like Beiwe's object ids.
    static func objectID() -> String {
        (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// Beiwe's easy alphanumerics: lowercase letters and 1-9 (no 0), `count` long.
    static func easyAlphanumeric(_ count: Int = 8) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }

    /// 32 random alphanumerics (push nonces).
    static func nonce() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<32).map { _ in alphabet.randomElement()! })
    }
}
