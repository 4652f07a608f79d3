import NIOCore

/// The life of one HTTP/2 connection as a value, beside the per-stream ``HTTPConnectionStateMachine``s: it takes the
/// connection's events (a stream opened or closed, the client's side ending, the timer, a graceful stop) and returns
/// what to do. Each stream keeps its own request deadline; this machine keeps the connection's:
///
/// | The connection | Deadline | When it passes |
/// |---|---|---|
/// | has no open stream | the idle timeout, from the last stream's end (or the connection's start) | GOAWAY, close |
/// | has open streams | none here: each stream has its request deadline | |
/// | is draining (a graceful stop, or the client's side ended) | the drain's end | close |
///
/// A graceful stop sends GOAWAY naming the last stream the server took, answers the open streams and closes when the
/// last one ends. HTTP/2 has no half-closed connection: a client whose side ends is drained the same way.
package struct HTTP2ConnectionStateMachine {
    /// What the connection should do after an event.
    package enum Action: Equatable, Sendable {
        case none
        /// Send GOAWAY (no error) naming the last stream taken; the open streams are still answered.
        case goAway(lastStreamID: Int)
        /// Send GOAWAY, then close.
        case goAwayAndClose(lastStreamID: Int)
        /// Close now.
        case close
    }

    /// Why a deadline is set.
    package enum DeadlineKind: Equatable, Sendable {
        case idle, drain
    }

    package enum Phase: Equatable, Sendable {
        case open, draining, closed
    }

    let limits: ConnectionLimits
    package private(set) var phase = Phase.open
    /// Streams opened by the client and not yet closed.
    package private(set) var openStreams = 0
    /// The highest stream id the client opened (what GOAWAY names).
    package private(set) var lastStreamID = 0
    private var idleSince: NIODeadline
    private var drainBy: NIODeadline?

    /// A connection whose HTTP/2 began at `now`.
    package init(limits: ConnectionLimits, now: NIODeadline) {
        self.limits = limits
        idleSince = now
    }

    /// The current deadline, if the connection has one.
    package var deadline: (at: NIODeadline, kind: DeadlineKind)? {
        switch phase {
        case .closed: return nil
        case .draining: return drainBy.map { ($0, .drain) }
        case .open: return openStreams == 0 ? (idleSince + limits.idleTimeout, .idle) : nil
        }
    }

    /// The client opened stream `id`.
    package mutating func streamOpened(_ id: Int) {
        guard phase != .closed else { return }
        openStreams += 1
        lastStreamID = max(lastStreamID, id)
    }

    /// A stream ended (answered, reset, or refused).
    package mutating func streamClosed(now: NIODeadline) -> Action {
        guard phase != .closed else { return .none }
        openStreams = max(0, openStreams - 1)
        guard openStreams == 0 else { return .none }
        idleSince = now
        if phase == .draining { return close() }
        return .none
    }

    /// The server is stopping: GOAWAY, answer the open streams until `drainBy`, then close.
    package mutating func quiesce(drainBy: NIODeadline) -> Action {
        guard phase == .open else { return .none }
        if openStreams == 0 {
            phase = .closed
            return .goAwayAndClose(lastStreamID: lastStreamID)
        }
        phase = .draining
        self.drainBy = drainBy
        return .goAway(lastStreamID: lastStreamID)
    }

    /// The client's side ended: no new stream can come, so the open ones are answered (until `drainBy`), then the
    /// connection closes. With none open it closes now (a connection left in CLOSE-WAIT holds a descriptor for good).
    package mutating func inputClosed(drainBy: NIODeadline) -> Action {
        switch phase {
        case .closed: return .none
        case .draining: return .none
        case .open:
            if openStreams == 0 { return close() }
            phase = .draining
            self.drainBy = drainBy
            return .none
        }
    }

    /// The timer fired at `now`.
    package mutating func timerFired(now: NIODeadline) -> Action {
        guard let (at, kind) = deadline, now >= at else { return .none }
        switch kind {
        case .idle:
            phase = .closed
            return .goAwayAndClose(lastStreamID: lastStreamID)
        case .drain:
            return close()
        }
    }

    /// The connection closed (either side).
    package mutating func closed() {
        phase = .closed
    }

    private mutating func close() -> Action {
        phase = .closed
        return .close
    }
}
