import Foundation

/// URL-safe base64 (RFC 4648 §5) as Beiwe uses it: `-` and `_` instead of `+` and `/`, and `=` padding kept.
public enum Base64URL {
    /// Encodes bytes as base64url with `=` padding and no line breaks.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let standard = Data(bytes).base64EncodedString()
        var out = String()
        out.reserveCapacity(standard.utf8.count)
        for scalar in standard.unicodeScalars {
            switch scalar {
            case "+": out.append("-")
            case "/": out.append("_")
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Decodes base64url text. Padding is optional; standard-alphabet `+` and `/` are accepted too.
    /// Returns nil for any other character or an impossible length.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = String()
        standard.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "-": standard.append("+")
            case "_": standard.append("/")
            case "A"..."Z", "a"..."z", "0"..."9", "+", "/", "=": standard.unicodeScalars.append(scalar)
            default: return nil
            }
        }
        while standard.hasSuffix("=") { standard.removeLast() }
        switch standard.utf8.count % 4 {
        case 0: break
        case 2: standard += "=="
        case 3: standard += "="
        default: return nil
        }
        guard let data = Data(base64Encoded: standard) else { return nil }
        return [UInt8](data)
    }
}
