import NIOCore
@testable import ServerSupport
import Testing

/// `HTTP2ConnectionStateMachine`, transition by transition: an HTTP/2 connection's idle deadline, its graceful stop
/// with GOAWAY, and the end of the client's side (issue 49: silent h2c and TLS connections were never closed, and a
/// client's orderly close left the connection in CLOSE-WAIT).
@Suite struct HTTP2ConnectionStateMachineTests {
    typealias Machine = HTTP2ConnectionStateMachine
    static let limits = ConnectionLimits(idleTimeout: .seconds(3), requestTimeout: .seconds(2), maxPipelined: 32)
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func at(_ milliseconds: Int64) -> NIODeadline { t0 + .milliseconds(milliseconds) }
    func machine() -> Machine { Machine(limits: Self.limits, now: t0) }

    @Test func aConnectionWithoutStreamsHasTheIdleDeadline() {
        let m = machine()
        #expect(m.deadline?.kind == .idle)
        #expect(m.deadline?.at == at(3000))
    }

    @Test func theIdleDeadlineSendsGoAwayAndCloses() {
        var m = machine()
        #expect(m.timerFired(now: at(2999)) == .none)
        #expect(m.timerFired(now: at(3000)) == .goAwayAndClose(lastStreamID: 0))
        #expect(m.phase == .closed)
        #expect(m.deadline == nil)
    }

    @Test func anOpenStreamHoldsTheIdleDeadlineOff() {
        var m = machine()
        m.streamOpened(1)
        #expect(m.deadline == nil, "a stream has its own request deadline")
        #expect(m.timerFired(now: at(10_000)) == .none)
    }

    @Test func theLastStreamsEndRestartsTheIdleDeadline() {
        var m = machine()
        m.streamOpened(1)
        m.streamOpened(3)
        #expect(m.streamClosed(now: at(1000)) == .none)
        #expect(m.deadline == nil)
        #expect(m.streamClosed(now: at(5000)) == .none)
        #expect(m.deadline?.at == at(8000))
        #expect(m.lastStreamID == 3)
    }

    @Test func aGracefulStopWithoutStreamsSendsGoAwayAndCloses() {
        var m = machine()
        m.streamOpened(5)
        _ = m.streamClosed(now: at(10))
        #expect(m.quiesce(drainBy: at(500)) == .goAwayAndClose(lastStreamID: 5))
        #expect(m.quiesce(drainBy: at(500)) == .none)
    }

    @Test func aGracefulStopAnswersOpenStreamsThenCloses() {
        var m = machine()
        m.streamOpened(1)
        #expect(m.quiesce(drainBy: at(500)) == .goAway(lastStreamID: 1))
        #expect(m.deadline?.kind == .drain)
        #expect(m.streamClosed(now: at(100)) == .close)
        #expect(m.phase == .closed)
    }

    @Test func aDrainThatRunsOutCloses() {
        var m = machine()
        m.streamOpened(1)
        _ = m.quiesce(drainBy: at(500))
        #expect(m.timerFired(now: at(499)) == .none)
        #expect(m.timerFired(now: at(500)) == .close)
    }

    @Test func theClientsSideEndingClosesAnIdleConnectionAtOnce() {
        var m = machine()
        #expect(m.inputClosed(drainBy: at(500)) == .close)
        #expect(m.phase == .closed)
    }

    @Test func theClientsSideEndingLetsOpenStreamsFinish() {
        var m = machine()
        m.streamOpened(1)
        #expect(m.inputClosed(drainBy: at(500)) == .none)
        #expect(m.phase == .draining)
        #expect(m.streamClosed(now: at(10)) == .close)
    }

    @Test func nothingHappensAfterTheClose() {
        var m = machine()
        m.closed()
        m.streamOpened(1)
        #expect(m.openStreams == 0)
        #expect(m.streamClosed(now: at(1)) == .none)
        #expect(m.quiesce(drainBy: at(1)) == .none)
        #expect(m.inputClosed(drainBy: at(1)) == .none)
        #expect(m.timerFired(now: at(100_000)) == .none)
    }
}
