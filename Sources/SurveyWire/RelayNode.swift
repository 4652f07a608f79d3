/// Which relay node issued a push token. Several relays run side by side without shared state: each has a node id
/// (`push-relay --node-id N`), every token it issues carries that id in its first characters (still shaped as the real
/// provider's tokens), and the mock server sends each push to the relay whose node id its token carries, as a
/// phone's registration belongs to one push provider.
public enum RelayNode {
    /// Node ids a token can carry.
    public static let range = 0...4095

    private static let base64URL = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let hex = Array("0123456789abcdef".utf8)

    /// `token` with its node characters set to `node`: the first three hex digits of an APNs token (64 hex), or the
    /// first two base64url characters of an FCM token's instance id. Other tokens are returned unchanged.
    public static func stamp(_ token: String, node: Int) -> String {
        precondition(range.contains(node), "relay node id out of range")
        var bytes = Array(token.utf8)
        if isAPNs(bytes) {
            bytes[0] = hex[node >> 8]
            bytes[1] = hex[(node >> 4) & 15]
            bytes[2] = hex[node & 15]
        } else if isFCM(bytes) {
            bytes[0] = base64URL[node >> 6]
            bytes[1] = base64URL[node & 63]
        } else {
            return token
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The node id `token` carries, or nil when it is not shaped as a relay token.
    public static func node(of token: String) -> Int? {
        let bytes = Array(token.utf8)
        if isAPNs(bytes) {
            guard let a = hexValue(bytes[0]), let b = hexValue(bytes[1]), let c = hexValue(bytes[2]) else { return nil }
            return a << 8 | b << 4 | c
        }
        if isFCM(bytes), let a = base64URL.firstIndex(of: bytes[0]), let b = base64URL.firstIndex(of: bytes[1]) {
            return a << 6 | b
        }
        return nil
    }

    private static func isAPNs(_ bytes: [UInt8]) -> Bool {
        bytes.count == 64 && bytes.allSatisfy { hexValue($0) != nil }
    }

    /// `INSTANCE:APA91b...` with an instance id of at least two characters.
    private static func isFCM(_ bytes: [UInt8]) -> Bool {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon >= 2 else { return false }
        return bytes[(colon + 1)...].starts(with: Array("APA91b".utf8))
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case 97...102: Int(byte - 87)
        case 65...70: Int(byte - 55)
        default: nil
        }
    }
}
