import NIOCore
@testable import ServerSupport
import Testing

/// `HTTPConnectionStateMachine`, transition by transition: events in, actions and the deadline out.
@Suite struct HTTPConnectionStateMachineTests {
    typealias Machine = HTTPConnectionStateMachine
    static let limits = ConnectionLimits(idleTimeout: .seconds(60), requestTimeout: .seconds(10), maxPipelined: 3)
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func at(_ seconds: Int64) -> NIODeadline { t0 + .seconds(seconds) }

    func machine() -> Machine { Machine(limits: Self.limits, now: t0) }

    /// Reads `text` whole: the bytes, then the decoder's head and end for each complete request in it.
    func read(_ text: String, into m: inout Machine, at now: NIODeadline, heads: Int = 0, ends: Int = 0) -> [Machine.Action] {
        m.bytesRead(ByteBuffer(string: text), now: now)
        var actions: [Machine.Action] = []
        for _ in 0..<heads { actions.append(m.requestHead(expectsContinue: false)) }
        for _ in 0..<ends { actions.append(m.requestEnd()) }
        return actions
    }

    let get = "GET /a HTTP/1.1\r\n\r\n"

    // MARK: Deadlines

    @Test func aNewConnectionHasTheIdleDeadline() {
        let m = machine()
        #expect(m.deadline?.kind == .idle)
        #expect(m.deadline?.at == at(60))
    }

    @Test func theFirstByteStartsTheRequestDeadline() {
        var m = machine()
        m.bytesRead(ByteBuffer(string: "GE"), now: at(5))
        #expect(m.deadline?.kind == .request)
        #expect(m.deadline?.at == at(15))
        // More bytes of the same request do not move it.
        m.bytesRead(ByteBuffer(string: "T /a"), now: at(8))
        #expect(m.deadline?.at == at(15))
    }

    @Test func aRequestReadWholeIsDispatchedAndHasNoDeadline() {
        var m = machine()
        #expect(read(get, into: &m, at: at(1), heads: 1, ends: 1) == [.none, .dispatch])
        #expect(m.deadline == nil)
        #expect(m.answering)
    }

    @Test func anAnswerReturnsToTheIdleDeadline() {
        var m = machine()
        _ = read(get, into: &m, at: at(1), heads: 1, ends: 1)
        #expect(m.answerStarts(keepAlive: true) == false)
        #expect(m.answerEnded(now: at(3)) == .none)
        #expect(m.deadline?.kind == .idle)
        #expect(m.deadline?.at == at(63))
        #expect(m.unanswered == 0 && m.readWhole == 0 && !m.answering)
    }

    /// The issue-31 case: `GET /a` whole and a `POST` head (Content-Length 1000, no body) in one write.
    @Test func aPipelinedHeadGetsTheRequestDeadlineOnceTheAnswerBeforeItIsWritten() {
        var m = machine()
        m.bytesRead(ByteBuffer(string: get + "POST /b HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"), now: at(0))
        #expect(m.requestHead(expectsContinue: false) == .none)
        #expect(m.requestEnd() == .dispatch)
        #expect(m.requestHead(expectsContinue: false) == .none)
        #expect(m.deadline == nil)  // the server is answering /a
        _ = m.answerStarts(keepAlive: true)
        #expect(m.answerEnded(now: at(4)) == .none)
        #expect(m.deadline?.kind == .request)
        #expect(m.deadline?.at == at(14))
        #expect(m.timerFired(now: at(13)) == .none)
        guard case .refuse(let refusal) = m.timerFired(now: at(14)) else {
            Issue.record("no 408")
            return
        }
        #expect(refusal.status == .requestTimeout)
        #expect(refusal.code == "request_timeout")
        #expect(m.phase == .closed)
        #expect(m.deadline == nil)
    }

    @Test func aSlowBodyAfterACompleteHeadGets408() {
        var m = machine()
        m.bytesRead(ByteBuffer(string: "POST /b HTTP/1.1\r\nContent-Length: 10\r\n\r\nab"), now: at(0))
        #expect(m.requestHead(expectsContinue: false) == .none)
        #expect(m.deadline?.kind == .request)
        guard case .refuse(let refusal) = m.timerFired(now: at(10)) else {
            Issue.record("no 408")
            return
        }
        #expect(refusal.status.code == 408)
    }

    @Test func aPartialSecondRequestInTheFirstOnesReadGetsTheRequestDeadline() {
        var m = machine()
        _ = read(get + "GET /b", into: &m, at: at(0), heads: 1, ends: 1)
        _ = m.answerStarts(keepAlive: true)
        _ = m.answerEnded(now: at(2))
        #expect(m.deadline?.kind == .request)
        #expect(m.deadline?.at == at(12))
    }

    @Test func theIdleDeadlineCloses() {
        var m = machine()
        #expect(m.timerFired(now: at(59)) == .none)
        #expect(m.timerFired(now: at(60)) == .close)
        #expect(m.phase == .closed)
        #expect(m.timerFired(now: at(61)) == .none)
    }

    // MARK: Pipelining

    @Test func pipelinedRequestsAreDispatchedOneAtATimeInOrder() {
        var m = machine()
        #expect(read(get + get + get, into: &m, at: at(0), heads: 3, ends: 3) == [.none, .none, .none, .dispatch, .none, .none])
        #expect(m.readWhole == 3)
        _ = m.answerStarts(keepAlive: true)
        #expect(m.answerEnded(now: at(1)) == .dispatch)
        _ = m.answerStarts(keepAlive: true)
        #expect(m.answerEnded(now: at(1)) == .dispatch)
        _ = m.answerStarts(keepAlive: true)
        #expect(m.answerEnded(now: at(1)) == .none)
        #expect(m.deadline?.kind == .idle)
    }

    @Test func moreThanMaxPipelinedUnansweredCloses() {
        var m = machine()
        #expect(read(get + get + get + get, into: &m, at: at(0), heads: 4) == [.none, .none, .none, .close])
        #expect(m.phase == .closed)
    }

    @Test func requestsAnsweredAtOnceCountTowardsTheCapUntilTheirReadEnds() {
        var m = machine()
        for _ in 0..<3 {
            #expect(read(get, into: &m, at: at(0), heads: 1, ends: 1) == [.none, .dispatch])
            _ = m.answerStarts(keepAlive: true)
            #expect(m.answerEnded(now: at(0)) == .none)
        }
        #expect(m.requestHead(expectsContinue: false) == .close)
        var n = machine()
        for _ in 0..<10 {
            #expect(read(get, into: &n, at: at(0), heads: 1, ends: 1) == [.none, .dispatch])
            _ = n.answerStarts(keepAlive: true)
            #expect(n.answerEnded(now: at(0)) == .none)
            n.readComplete()
        }
        #expect(n.phase == .open)
    }

    @Test func continueIsSentOnlyToTheFirstRequestInLine() {
        var m = machine()
        #expect(m.requestHead(expectsContinue: true) == .sendContinue)
        var n = machine()
        _ = read(get, into: &n, at: at(0), heads: 1, ends: 1)
        #expect(n.requestHead(expectsContinue: true) == .none)
    }

    // MARK: Closing

    @Test func anAnswerThatClosesClosesAfterItIsWritten() {
        var m = machine()
        _ = read(get, into: &m, at: at(0), heads: 1, ends: 1)
        #expect(m.answerStarts(keepAlive: false) == true)
        #expect(m.answerEnded(now: at(1)) == .close)
    }

    @Test func inputClosedWhenIdleCloses() {
        var m = machine()
        #expect(m.inputClosed() == .close)
    }

    /// Issue 49: no unasked `100 Continue` goes out when the client's side ends; what was read whole is answered.
    @Test func inputClosedWhileAnsweringWritesNothingThenAnswersAndCloses() {
        var m = machine()
        _ = read(get + get, into: &m, at: at(0), heads: 2, ends: 2)
        #expect(m.inputClosed() == .none)
        #expect(m.inputClosed() == .none)
        // The first answer keeps the connection (another request was read whole), the last one closes it.
        #expect(m.answerStarts(keepAlive: true) == false)
        #expect(m.answerEnded(now: at(1)) == .dispatch)
        #expect(m.answerStarts(keepAlive: true) == true)
        #expect(m.answerEnded(now: at(1)) == .close)
    }

    @Test func inputClosedWithOnlyAPartialRequestCloses() {
        var m = machine()
        m.bytesRead(ByteBuffer(string: "POST /b HTTP/1.1\r\nContent-Length: 9\r\n\r\n"), now: at(0))
        _ = m.requestHead(expectsContinue: false)
        #expect(m.inputClosed() == .close)
    }

    @Test func closingWhileAnsweringCancelsTheAnswer() {
        var m = machine()
        _ = read(get, into: &m, at: at(0), heads: 1, ends: 1)
        #expect(m.closed() == .cancelAnswer)
        #expect(m.phase == .closed)
        var idle = machine()
        #expect(idle.closed() == .none)
        // An answer that arrives after the close changes nothing.
        #expect(m.answerStarts(keepAlive: true) == true)
        #expect(m.answerEnded(now: at(1)) == .none)
    }

    // MARK: Parse errors

    @Test func parseErrorsAreRefusedBy414431Or400() {
        var long = machine()
        long.bytesRead(ByteBuffer(string: "GET /aaaa"), now: at(0))
        #expect(long.parseFailed(.headerOverflow) == .refuse(.init(status: .uriTooLong, code: "uri_too_long", message: "the request target is too long")))
        var headers = machine()
        headers.bytesRead(ByteBuffer(string: "GET / HTTP/1.1\r\nX: aaaa"), now: at(0))
        guard case .refuse(let refusal) = headers.parseFailed(.headerOverflow) else {
            Issue.record("no refusal")
            return
        }
        #expect(refusal.status.code == 431)
        var invalid = machine()
        guard case .refuse(let bad) = invalid.parseFailed(.invalid) else {
            Issue.record("no refusal")
            return
        }
        #expect(bad.status.code == 400)
        #expect(invalid.phase == .closed)
    }

    @Test func aParseErrorAfterARequestReadWholeWaitsForItsAnswerThenCloses() {
        var m = machine()
        _ = read(get + "BAD", into: &m, at: at(0), heads: 1, ends: 1)
        #expect(m.parseFailed(.invalid) == .none)
        #expect(m.answerStarts(keepAlive: true) == true)
        #expect(m.answerEnded(now: at(1)) == .close)
    }

    // MARK: Output

    @Test func readsAreHeldWhileTheClientTakesNoOutput() {
        var m = machine()
        #expect(m.readRequested() == .read)
        #expect(m.writabilityChanged(false, now: at(2)) == .none)
        #expect(m.readRequested() == .none)
        #expect(m.deadline?.kind == .stalled)
        #expect(m.deadline?.at == at(62))
        #expect(m.writabilityChanged(true, now: at(3)) == .read)
        #expect(m.writabilityChanged(true, now: at(3)) == .none)
        #expect(m.deadline?.kind == .idle)
    }

    @Test func aStalledClientIsClosedEvenWhileAnswersAreOwed() {
        var m = machine()
        _ = read(get + get, into: &m, at: at(0), heads: 2, ends: 2)
        _ = m.writabilityChanged(false, now: at(1))
        #expect(m.timerFired(now: at(61)) == .close)
    }

    // MARK: Streams

    @Test func aStreamHasNoDeadlineAndReadsFreely() {
        var m = machine()
        _ = read("GET /s HTTP/1.1\r\n\r\n", into: &m, at: at(0), heads: 1, ends: 1)
        m.streamOpened()
        #expect(m.deadline == nil)
        _ = m.writabilityChanged(false, now: at(1))
        #expect(m.readRequested() == .read)
        #expect(m.timerFired(now: at(1000)) == .none)
        #expect(m.inputClosed() == .close)
    }

    @Test func aStreamRefusedAfterItOpenedClosesAfterTheRefusal() {
        var m = machine()
        _ = read("GET /s HTTP/1.1\r\n\r\n", into: &m, at: at(0), heads: 1, ends: 1)
        m.streamOpened()
        #expect(m.answerStarts(keepAlive: true) == true)
        #expect(m.answerEnded(now: at(1)) == .close)
    }

    // MARK: Graceful stop

    @Test func quiesceClosesAnIdleConnectionAtOnce() {
        var m = machine()
        #expect(m.quiesce(now: at(1), drainBy: at(2)) == .close)
    }

    @Test func quiesceLetsTheAnswerUnderWayFinishThenCloses() {
        var m = machine()
        _ = read(get + get, into: &m, at: at(0), heads: 2, ends: 2)
        #expect(m.quiesce(now: at(1), drainBy: at(2)) == .none)
        #expect(m.deadline == nil)
        // The answer says `Connection: close`; the request queued behind it is not answered.
        #expect(m.answerStarts(keepAlive: true) == true)
        #expect(m.answerEnded(now: at(3)) == .close)
    }

    @Test func quiesceGivesARequestBeingReadUntilTheDrainEnds() {
        var m = machine()
        m.bytesRead(ByteBuffer(string: "GET /a HT"), now: at(0))
        #expect(m.quiesce(now: at(1), drainBy: at(2)) == .none)
        #expect(m.deadline?.kind == .drain)
        #expect(m.deadline?.at == at(2))
        #expect(m.timerFired(now: at(2)) == .close)
    }

    @Test func aStreamClosesOnQuiesce() {
        var m = machine()
        _ = read("GET /s HTTP/1.1\r\n\r\n", into: &m, at: at(0), heads: 1, ends: 1)
        m.streamOpened()
        #expect(m.quiesce(now: at(1), drainBy: at(2)) == .close)
    }
}
