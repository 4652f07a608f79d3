import Testing
@testable import SurveyWire

/// Relay node ids ride in the first characters of a token, which keeps the real providers' token shapes.
@Suite struct RelayNodeTests {
    @Test(arguments: [0, 1, 63, 64, 255, 4095])
    func aStampedTokenNamesItsNode(node: Int) {
        let apns = String(repeating: "ab", count: 32)
        let fcm = "abcdefghijklmnopqrstuv:APA91b" + String(repeating: "x", count: 134)
        for token in [apns, fcm] {
            let stamped = RelayNode.stamp(token, node: node)
            #expect(stamped.utf8.count == token.utf8.count)
            #expect(RelayNode.node(of: stamped) == node)
            #expect(stamped.dropFirst(3) == token.dropFirst(3))
        }
        let hexOnly = RelayNode.stamp(apns, node: node).allSatisfy { $0.isHexDigit }
        #expect(hexOnly)
    }

    @Test func otherTokensCarryNoNode() {
        #expect(RelayNode.node(of: "not-a-token") == nil)
        #expect(RelayNode.node(of: String(repeating: "z", count: 64)) == nil)
        #expect(RelayNode.stamp("plain", node: 5) == "plain")
    }
}
