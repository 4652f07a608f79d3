import Foundation
import Testing
@testable import PushRelay

/// ``RandomHex``: identifiers from the seeded generator, secrets from the system's.
@Suite struct RandomHexTests {
    static func isLowerHex(_ text: String) -> Bool { text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }

    @Test func identifiersAreLowercaseHexOfTheLengthAskedAndDoNotRepeat() {
        let ids = (0..<10_000).map { _ in RandomHex.make(16) }
        #expect(ids.allSatisfy { $0.utf8.count == 16 && Self.isLowerHex($0) })
        #expect(Set(ids).count == ids.count)
        #expect(RandomHex.make(40).utf8.count == 40 && RandomHex.make(0).isEmpty)
    }

    @Test func apnsIdsAreVersion4UUIDsInLowercase() {
        let ids = (0..<10_000).map { _ in RandomHex.uuid() }
        for id in ids.prefix(1_000) {
            let parsed = UUID(uuidString: id)
            #expect(parsed != nil && id.count == 36 && id == id.lowercased())
            let bytes = Array(id.utf8)
            #expect(bytes[14] == UInt8(ascii: "4"), "version 4: \(id)")
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(bytes[19]), "variant 10: \(id)")
        }
        #expect(Set(ids).count == ids.count)
    }

    @Test func everyDigitComesUpAboutEquallyOften() {
        var counts = [Character: Int]()
        for character in RandomHex.make(160_000) { counts[character, default: 0] += 1 }
        // 10,000 expected per digit; a fair generator stays well within ±5 % at this count.
        #expect(counts.count == 16)
        #expect(counts.values.allSatisfy { (9_500...10_500).contains($0) }, "\(counts)")
    }

    @Test func secretsAreLowercaseHexFromTheSystemGenerator() {
        let secrets = (0..<100).map { _ in RandomHex.secret(40) }
        #expect(secrets.allSatisfy { $0.utf8.count == 40 && Self.isLowerHex($0) })
        #expect(Set(secrets).count == secrets.count)
    }
}
