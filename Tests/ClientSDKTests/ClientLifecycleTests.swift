import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

@Suite struct ClientLifecycleTests {
    @Test func idleRunningClosedAndNothingAfterClosed() {
        var lifecycle = ClientLifecycle()
        #expect(lifecycle.phase == .idle)
        let started = lifecycle.starting()
        #expect(started && lifecycle.phase == .running)
        lifecycle.stopped()
        #expect(lifecycle.phase == .idle)
        let restarted = lifecycle.starting()
        let closed = lifecycle.closing()
        #expect(restarted && closed && lifecycle.isClosed)
        let closedAgain = lifecycle.closing()
        let startedAfterClose = lifecycle.starting()
        #expect(!closedAgain, "close runs its teardown once")
        #expect(!startedAfterClose, "a closed client does not start again")
        lifecycle.stopped()
        #expect(lifecycle.isClosed)
    }
}
