/// Random lowercase hex text: FCM message id suffixes, service-account key ids, access tokens. One random 64-bit
/// number per 16 digits (each draw can be a system call: the send path makes one).
enum RandomHex {
    static func make(_ count: Int) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: 0, count: count)
        var value: UInt64 = 0
        for i in 0..<count {
            if i % 16 == 0 { value = UInt64.random(in: 0...UInt64.max) }
            bytes[i] = digits[Int(value & 0xF)]
            value >>= 4
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
