import Foundation
import SurveyCrypto
import Testing
@testable import MockServer

/// The parsed-key cache is bounded: driven past its limit it starts over, and keys still come back right.
@Suite struct KeyCacheTests {
    @Test func drivenPastItsLimitTheCacheStartsOverAndStillAnswers() throws {
        let cache = KeyCache(limit: 4)
        let key = try RSAKey.generate(bits: 1024)
        let der = Data(try key.privateKeyDER())
        let expected = try key.publicKeyDER()
        for owner in 0..<10 {
            let parsed = try cache.key(for: "participant:\(owner)", der: der)
            #expect(try parsed.publicKeyDER() == expected)
            #expect(cache.counts.keys <= 4, "\(cache.counts.keys) entries after \(owner + 1) owners")
        }
        // 10 owners through a map of 4: it started over twice and holds the last two.
        #expect(cache.counts.keys == 2)
        #expect(try cache.key(for: "participant:9", der: der).publicKeyDER() == expected)
        #expect(KeyCache().limit == KeyCache.defaultLimit)
    }
}
