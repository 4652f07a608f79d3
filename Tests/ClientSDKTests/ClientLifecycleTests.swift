import Testing
@testable import ClientSDK

/// ``ClientLifecycle``, transition by transition.
@Suite struct ClientLifecycleTests {
    @Test func aStartBeginsOneNumberedStartAndItsSuccessRuns() {
        var lifecycle = ClientLifecycle()
        #expect(lifecycle.phase == .idle)
        #expect(lifecycle.event(.startRequested) == .begin(number: 1))
        #expect(lifecycle.phase == .starting(number: 1, restart: false))
        #expect(lifecycle.event(.startEnded(number: 1, succeeded: true)) == .none)
        #expect(lifecycle.phase == .running)
    }

    @Test func aSecondStartDuringTheFirstJoinsIt() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        #expect(lifecycle.event(.startRequested) == .join)
        #expect(lifecycle.phase == .starting(number: 1, restart: false))
    }

    @Test func aFirstStartThatFailedUndoesWhatItBeganAndLeavesTheClientIdle() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        #expect(lifecycle.event(.startEnded(number: 1, succeeded: false)) == .undo)
        #expect(lifecycle.phase == .idle)
        // The next start is a first start again.
        #expect(lifecycle.event(.startRequested) == .begin(number: 2))
        #expect(lifecycle.phase == .starting(number: 2, restart: false))
    }

    @Test func aStartWhileRunningRedoesTheChecksAndItsFailureLeavesTheClientRunning() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        _ = lifecycle.event(.startEnded(number: 1, succeeded: true))
        #expect(lifecycle.event(.startRequested) == .begin(number: 2))
        #expect(lifecycle.phase == .starting(number: 2, restart: true))
        #expect(lifecycle.event(.startEnded(number: 2, succeeded: false)) == .none)
        #expect(lifecycle.phase == .running)
    }

    @Test func aStopDuringAStartCancelsItAndTheStartsEndChangesNothing() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        #expect(lifecycle.event(.stopRequested) == .stop(cancellingStart: true))
        #expect(lifecycle.phase == .idle)
        // The cancelled start reports after the stop: the stop ends what it began, nothing is undone twice.
        #expect(lifecycle.event(.startEnded(number: 1, succeeded: false)) == .none)
        #expect(lifecycle.phase == .idle)
    }

    @Test func aCancelledStartReportingLateDoesNotTouchTheNextStart() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        _ = lifecycle.event(.stopRequested)
        #expect(lifecycle.event(.startRequested) == .begin(number: 2))
        // Start 1's failure reaches the actor after start 2 began: start 2 is neither undone nor ended by it.
        #expect(lifecycle.event(.startEnded(number: 1, succeeded: false)) == .none)
        #expect(lifecycle.phase == .starting(number: 2, restart: false))
        #expect(lifecycle.event(.startEnded(number: 2, succeeded: true)) == .none)
        #expect(lifecycle.phase == .running)
    }

    @Test func aStopWhileRunningOrIdleEndsTheBackgroundWork() {
        var lifecycle = ClientLifecycle()
        // Idle too: a client never started may run retries (an upload that failed).
        #expect(lifecycle.event(.stopRequested) == .stop(cancellingStart: false))
        _ = lifecycle.event(.startRequested)
        _ = lifecycle.event(.startEnded(number: 1, succeeded: true))
        #expect(lifecycle.event(.stopRequested) == .stop(cancellingStart: false))
        #expect(lifecycle.phase == .idle)
    }

    @Test func aCloseDuringAStartCancelsItAndClosesOnce() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        #expect(lifecycle.event(.closeRequested) == .close(cancellingStart: true))
        #expect(lifecycle.isClosed)
        #expect(lifecycle.event(.startEnded(number: 1, succeeded: false)) == .none)
        #expect(lifecycle.event(.closeRequested) == .none)
    }

    @Test func closedIsForGood() {
        var lifecycle = ClientLifecycle()
        _ = lifecycle.event(.startRequested)
        _ = lifecycle.event(.startEnded(number: 1, succeeded: true))
        #expect(lifecycle.event(.closeRequested) == .close(cancellingStart: false))
        #expect(lifecycle.event(.startRequested) == .refuse)
        #expect(lifecycle.event(.stopRequested) == .none)
        #expect(lifecycle.event(.closeRequested) == .none)
        #expect(lifecycle.phase == .closed)
    }
}
