import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

/// The SDK's value-type state machines, every transition walked (the I/O is the client's; these only decide).
@Suite struct BackoffTests {
    @Test func waitsDoubleWithinTheUpperHalfUpToTheCapAndResetAfterSuccess() {
        var backoff = Backoff(base: .milliseconds(100), cap: .seconds(1))
        var random = SeededRandom(seed: 7)
        #expect(backoff.ceiling == .zero)
        let ceilings: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)]
        for ceiling in ceilings {
            let wait = backoff.failed(using: &random)
            #expect(backoff.ceiling == ceiling)
            #expect(wait >= ceiling / 2 && wait <= ceiling, "\(wait) outside the upper half of \(ceiling)")
        }
        // Far past the cap the exponent cannot overflow.
        for _ in 0..<100 { _ = backoff.failed(using: &random) }
        #expect(backoff.ceiling == .seconds(1))
        backoff.reset()
        #expect(backoff.failures == 0)
        #expect(backoff.failed(using: &random) <= .milliseconds(100))
    }
}
