import HTTPTypes
import NIOCore

/// The life of one HTTP/1 server connection, as a value: it takes the connection's events and returns what to do,
/// and does no I/O itself (``HTTPConnection`` and the channel handlers do that). The shape of async-http-client's
/// `HTTP1ConnectionStateMachine`.
///
/// It knows where the incoming bytes stand (``RequestFraming``), how many requests have been read and not answered,
/// whether the client can take more output, and whether the connection is closing; from that it keeps one deadline:
///
/// | The connection | Deadline | When it passes |
/// |---|---|---|
/// | owes an answer to a request read whole | none: the server is working | |
/// | has part of a request (and owes nothing) | the request timeout, from that request's first byte or the last answer | 408 `request_timeout`, close |
/// | has nothing under way | the idle timeout, from the last answer (or the connection) | close |
/// | cannot write (the client is not reading) | the idle timeout, from when writes stopped | close |
/// | is draining for a graceful stop, owing nothing | the drain's end | close |
/// | carries an event stream | none | |
///
/// Requests are answered one at a time, in order: a request read whole while another is being answered waits
/// (``Action/dispatch`` comes when its turn does), and a client with more than `maxPipelined` requests read and not
/// answered is disconnected. While the client takes no output, nothing more is read from it.
package struct HTTPConnectionStateMachine {
    /// What the connection should do after an event.
    package enum Action: Equatable {
        case none
        /// Answer the oldest request read whole.
        case dispatch
        /// Pass on the read that was held back while the client took no output.
        case read
        /// Write `100 Continue` (the client asked for it, `Expect: 100-continue`, and waits for it before sending its
        /// body). Never sent unasked (PROTOCOL.md §9).
        case sendContinue
        /// Write this refusal straight to the socket (no answer is under way), then close.
        case refuse(Refusal)
        /// Close the connection.
        case close
        /// The connection has closed while an answer was being made: cancel that work.
        case cancelAnswer
    }

    /// A refusal written without the router: the status, and the JSON error's code and message.
    package struct Refusal: Equatable, Sendable {
        package var status: HTTPResponse.Status
        package var code: String
        package var message: String
    }

    /// Why a deadline is set.
    package enum DeadlineKind: Equatable, Sendable {
        case idle, request, stalled, drain
    }

    /// Why the decoder refused a request.
    package enum ParseFailure: Equatable, Sendable {
        /// The request line or headers are over NIO's limit.
        case headerOverflow
        /// Anything else NIO cannot parse.
        case invalid
    }

    package enum Phase: Equatable, Sendable {
        case open
        /// An event stream: no deadlines from here on; the first answer written closes it.
        case streaming
        case closed
    }

    let limits: ConnectionLimits
    package private(set) var phase = Phase.open
    private var framing = RequestFraming()
    /// Requests whose head has been read and whose answer has not ended (the one being answered included).
    package private(set) var unanswered = 0
    /// Of those, the ones read whole (queued or being answered).
    package private(set) var readWhole = 0
    /// Whether an answer is being made.
    package private(set) var answering = false
    /// Request heads read since the socket's last read ended (answered or not).
    private var headsThisRead = 0
    /// The answer being written closes the connection once it has ended.
    private var closeAfterAnswer = false
    /// The client's side has ended: answer what was read whole, then close.
    private var inputEnded = false
    /// The decoder refused a request after others read whole: answer those, then close.
    private var refusedAfter = false
    /// The server is stopping: no more requests are taken.
    package private(set) var quiescing = false
    private var writable = true
    private var readHeld = false
    private var idleSince: NIODeadline
    private var readingSince: NIODeadline
    private var stalledSince: NIODeadline
    private var drainBy: NIODeadline?

    /// A connection opened at `now`.
    package init(limits: ConnectionLimits, now: NIODeadline) {
        self.limits = limits
        idleSince = now
        readingSince = now
        stalledSince = now
    }

    /// The current deadline, if the connection has one.
    package var deadline: (at: NIODeadline, kind: DeadlineKind)? {
        guard phase == .open else { return nil }
        if !writable { return (stalledSince + limits.idleTimeout, .stalled) }
        // Read whole and not answered: the server is working, and no deadline is the client's to miss.
        if readWhole > 0 { return nil }
        let own: (at: NIODeadline, kind: DeadlineKind) = framing.inRequest || unanswered > 0
            ? (readingSince + limits.requestTimeout, .request)
            : (idleSince + limits.idleTimeout, .idle)
        if let drainBy, drainBy < own.at { return (drainBy, .drain) }
        return own
    }

    // MARK: Reading

    /// Bytes were read (before the decoder sees them).
    package mutating func bytesRead(_ bytes: ByteBuffer, now: NIODeadline) {
        guard phase == .open else { return }
        let before = (framing.inRequest, framing.completed)
        framing.consume(bytes)
        // A request began in these bytes and is still being read: its deadline runs from now.
        if framing.inRequest && (!before.0 || framing.completed != before.1) { readingSince = now }
    }

    /// The decoder read a request's head.
    package mutating func requestHead(expectsContinue: Bool) -> Action {
        guard phase == .open else { return .none }
        unanswered += 1
        headsThisRead += 1
        // No answer can be written out of order: a client this far ahead is not reading what it asked for. Requests
        // answered at once (the relay's health, on the connection itself) count until the read that brought them
        // ends: a client sending them by the thousand without reading would otherwise have the loop answer them all.
        if unanswered > limits.maxPipelined || headsThisRead > limits.maxPipelined { return close() }
        // Only the first request in line may be told to go on: a 100 for a later one would land amid earlier answers.
        return expectsContinue && unanswered == 1 && !quiescing ? .sendContinue : .none
    }

    /// The socket's read ended (NIO's `channelReadComplete`): what it brought has been decoded.
    package mutating func readComplete() {
        headsThisRead = 0
    }

    /// The decoder read a request's end: it is read whole.
    package mutating func requestEnd() -> Action {
        guard phase == .open else { return .none }
        readWhole += 1
        return dispatchNext()
    }

    /// The decoder refused what it read.
    package mutating func parseFailed(_ failure: ParseFailure) -> Action {
        guard phase == .open else { return .none }
        if readWhole > 0 {
            // Answers are owed first; the refused request gets none, and the connection closes after them.
            refusedAfter = true
            return .none
        }
        let refusal = switch failure {
        case .headerOverflow where !framing.requestLineEnded:
            Refusal(status: .uriTooLong, code: "uri_too_long", message: "the request target is too long")
        case .headerOverflow:
            Refusal(status: .requestHeaderFieldsTooLarge, code: "header_fields_too_large", message: "the request line or headers are too large")
        case .invalid:
            Refusal(status: .badRequest, code: "bad_request", message: "the request is not valid HTTP/1.1")
        }
        phase = .closed
        return .refuse(refusal)
    }

    /// The client's side of the connection ended (after the decoder read what came before). A client that only
    /// half-closed and one that has gone look the same here, and nothing may be written to tell them apart (no
    /// unasked `100 Continue`): what was read whole is answered, then the connection closes. A client that has gone
    /// answers that write with a reset.
    package mutating func inputClosed() -> Action {
        switch phase {
        case .closed: return .none
        case .streaming: return close()
        case .open: break
        }
        inputEnded = true
        // Nothing read whole is waiting: no answer is owed, and no request can complete now.
        guard readWhole > 0 else { return close() }
        return .none
    }

    // MARK: Answering

    /// An answer's head is about to be written; returns whether it closes the connection (`Connection: close`).
    /// - Parameter keepAlive: whether the request allows the connection to stay open.
    package mutating func answerStarts(keepAlive: Bool) -> Bool {
        switch phase {
        case .closed: return true
        case .streaming:
            // A stream refused after it was opened: nothing follows the refusal.
            closeAfterAnswer = true
            return true
        case .open: break
        }
        let last = readWhole <= 1
        closeAfterAnswer = !keepAlive || quiescing || (last && (inputEnded || refusedAfter))
        return closeAfterAnswer
    }

    /// An answer has been written whole.
    package mutating func answerEnded(now: NIODeadline) -> Action {
        guard phase != .closed else { return .none }
        guard answering || phase == .streaming else { return .none }
        answering = false
        unanswered = max(0, unanswered - 1)
        readWhole = max(0, readWhole - 1)
        if closeAfterAnswer { return close() }
        guard phase == .open else { return .none }
        idleSince = now
        // A request begun while this one was answered gets its whole request timeout from now.
        readingSince = now
        if readWhole > 0 { return dispatchNext() }
        if inputEnded { return close() }
        return .none
    }

    /// The connection now carries an event stream: no deadlines from here on.
    package mutating func streamOpened() {
        guard phase == .open else { return }
        phase = .streaming
        answering = false
    }

    private mutating func dispatchNext() -> Action {
        guard !answering, readWhole > 0 else { return .none }
        answering = true
        return .dispatch
    }

    // MARK: Output

    /// The channel's writability changed (it stops being writable when the client does not take what was written).
    package mutating func writabilityChanged(_ isWritable: Bool, now: NIODeadline) -> Action {
        guard writable != isWritable else { return .none }
        writable = isWritable
        if !isWritable {
            stalledSince = now
            return .none
        }
        if readHeld {
            readHeld = false
            return .read
        }
        return .none
    }

    /// The channel wants to read more: held back while the client takes no output (it would only add to it).
    package mutating func readRequested() -> Action {
        switch phase {
        case .closed: return .none
        case .streaming: return .read
        case .open:
            if writable { return .read }
            readHeld = true
            return .none
        }
    }

    // MARK: Time and stopping

    /// The timer fired at `now`.
    package mutating func timerFired(now: NIODeadline) -> Action {
        guard let (at, kind) = deadline, now >= at else { return .none }
        switch kind {
        case .idle, .stalled, .drain:
            return close()
        case .request:
            phase = .closed
            let seconds = limits.requestTimeout.nanoseconds / 1_000_000_000
            return .refuse(Refusal(status: .requestTimeout, code: "request_timeout",
                                   message: "the request was not read whole within \(seconds) s"))
        }
    }

    /// The server is stopping: close now if nothing is under way; else answer what was read whole (closing after
    /// it), and give a request being read until `drainBy`.
    package mutating func quiesce(now: NIODeadline, drainBy: NIODeadline) -> Action {
        switch phase {
        case .closed: return .none
        case .streaming: return close()
        case .open: break
        }
        quiescing = true
        self.drainBy = drainBy
        if readWhole == 0 && !framing.inRequest && unanswered == 0 { return close() }
        return .none
    }

    /// The connection closed (either side).
    package mutating func closed() -> Action {
        let wasAnswering = answering
        phase = .closed
        answering = false
        return wasAnswering ? .cancelAnswer : .none
    }

    private mutating func close() -> Action {
        phase = .closed
        return .close
    }
}
