import Foundation

/// URL-safe base64 (RFC 4648 §5) as Beiwe uses it: `-` and `_` instead of `+` and `/`, and `=` padding kept.
public enum Base64URL {
    /// Encodes bytes as base64url with `=` padding and no line breaks.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var standard = [UInt8](Data(bytes).base64EncodedData())
        for i in standard.indices {
            switch standard[i] {
            case UInt8(ascii: "+"): standard[i] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): standard[i] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: standard, as: UTF8.self)
    }

    /// Decodes base64url text. Padding is optional; standard-alphabet `+` and `/` are accepted too.
    /// Returns nil for any other character or an impossible length.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                standard.append(byte)
            default: return nil
            }
        }
        while standard.last == UInt8(ascii: "=") { standard.removeLast() }
        switch standard.count % 4 {
        case 0: break
        case 2: standard += [UInt8(ascii: "="), UInt8(ascii: "=")]
        case 3: standard.append(UInt8(ascii: "="))
        default: return nil
        }
        guard let data = Data(base64Encoded: Data(standard)) else { return nil }
        return [UInt8](data)
    }
}
