import Synchronization

/// Random identifiers the relay hands out on every send: FCM message id suffixes and APNs ids. Drawn from one
/// xoshiro256** generator seeded once from the system's generator, not from the system's generator itself: on Linux
/// every draw of that one is a `getrandom` system call, one per delivery on the send path (the identifiers are unique
/// labels, not secrets). Secrets — FCM access tokens, key ids — come from ``RandomHex/secret(_:)``.
enum RandomHex {
    /// xoshiro256** (Blackman and Vigna), 2^256 − 1 period.
    struct Xoshiro: RandomNumberGenerator, Sendable {
        private var s: (UInt64, UInt64, UInt64, UInt64)

        init<Source: RandomNumberGenerator>(seededFrom source: inout Source) {
            repeat {
                s = (source.next(), source.next(), source.next(), source.next())
            } while s == (0, 0, 0, 0)
        }

        mutating func next() -> UInt64 {
            let result = rotl(s.1 &* 5, 7) &* 9
            let t = s.1 << 17
            s.2 ^= s.0
            s.3 ^= s.1
            s.1 ^= s.2
            s.0 ^= s.3
            s.2 ^= t
            s.3 = rotl(s.3, 45)
            return result
        }

        private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
    }

    private static let generator: Mutex<Xoshiro> = {
        var system = SystemRandomNumberGenerator()
        return Mutex(Xoshiro(seededFrom: &system))
    }()

    private static let digits = Array("0123456789abcdef".utf8)

    /// `count` random lowercase hex digits for an identifier (no system call).
    static func make(_ count: Int) -> String {
        generator.withLock { hex(count, using: &$0) }
    }

    /// `count` random lowercase hex digits from the system's generator, for a secret.
    static func secret(_ count: Int) -> String {
        var system = SystemRandomNumberGenerator()
        return hex(count, using: &system)
    }

    /// A random (version 4) UUID in lowercase text, as APNs ids are (no system call).
    static func uuid() -> String {
        var (high, low) = generator.withLock { ($0.next(), $0.next()) }
        high = (high & ~0xF000) | 0x4000                               // version 4
        low = (low & ~(0xC000 << 48)) | (0x8000 << 48)                 // variant 10
        var out = [UInt8]()
        out.reserveCapacity(36)
        for index in 0..<32 {
            if index == 8 || index == 12 || index == 16 || index == 20 { out.append(UInt8(ascii: "-")) }
            let word = index < 16 ? high : low
            out.append(digits[Int((word >> UInt64(60 - 4 * (index % 16))) & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex<Generator: RandomNumberGenerator>(_ count: Int, using generator: inout Generator) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        var value: UInt64 = 0
        for i in 0..<count {
            if i % 16 == 0 { value = generator.next() }
            bytes[i] = digits[Int(value & 0xF)]
            value >>= 4
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
