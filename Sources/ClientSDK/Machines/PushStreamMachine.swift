/// The relay link's connection loop as a value type: it takes what happened to the push stream (it connected, ended,
/// was refused, its token is gone, a renewal came to something, a wait is over) and returns the one thing to do next.
/// The client performs the I/O and reports the outcome back, as async-http-client's `HTTP1ConnectionStateMachine` and
/// postgres-nio's `ConnectionStateMachine` do.
///
/// ```
///        start            connected             ended / failed
/// idle ───────▶ connecting ─────────▶ streaming ───────────────▶ waiting ──(waitOver)──▶ connecting
///                  │  refused / failed                              ▲
///                  ├────────────────────────────────────────────────┘
///                  │  tokenGone (404, 410)       renewalFailed            waitOver
///                  └──────────────────▶ renewing ─────────────▶ renewalWaiting ───▶ renewing
///                                          │ renewed
///                                          └──────────▶ connecting (on the new token)
/// (stop: the loop halts, its work is cancelled and the machine is new again)
/// ```
///
/// The stream's loop owns its machine (``MachineLoop``; nothing else touches it): a halt (`stop()`) makes it new again,
/// so a stream after a stop starts from scratch. The resume point is the client's (``StreamResumePoint``): it outlives
/// a halt.
struct PushStreamMachine: LoopMachine {
    enum State: Sendable, Equatable {
        /// Not started yet.
        case idle
        /// A connect is under way.
        case connecting
        /// The stream answered 200 and is being read.
        case streaming
        /// Waiting before the next connect.
        case waiting
        /// The token was rotated or deleted: a renewal attempt is under way. `minted`: the new token exists already (only
        /// telling the server is left).
        case renewing(minted: Bool)
        /// A renewal attempt failed: waiting before the next one.
        case renewalWaiting(minted: Bool)
    }

    enum Event: Sendable, Equatable {
        /// Open the stream (the client started); nothing when it is open or opening already.
        case begin
        /// The stream answered 200.
        case connected
        /// The stream answered another status than 200, 404 or 410.
        case refused(status: Int)
        /// The stream answered 404 or 410: the relay no longer knows the token.
        case tokenGone(status: Int)
        /// The connect or the read failed (a transport error).
        case failed
        /// A stream that was up ended: closed by the relay, or silent for too long (`dead`).
        case ended(dead: Bool)
        /// The wait of the last ``Action/wait(_:reconnecting:)`` is over.
        case waitOver
        /// A renewal attempt got a token the server holds.
        case renewed
        /// A renewal attempt failed; `minted`: the new token exists already.
        case renewalFailed(minted: Bool)
    }

    enum Action: Sendable, Equatable {
        /// Nothing to do (a `begin` while the stream runs).
        case none
        /// Open the stream on the token in use, resuming at the client's resume point.
        case connect
        /// The stream is up: read it until it ends, then report ``Event/ended(dead:)`` (or ``Event/failed``).
        case read
        /// Wait, then report ``Event/waitOver``. `reconnecting`: tell the app the stream went silent first.
        case wait(Duration, reconnecting: Bool)
        /// Renew the token: mint a new one (when `mint`), tell the server, then report ``Event/renewed`` or
        /// ``Event/renewalFailed(minted:)``. `reportGone`: the status that said the token is gone, to report once.
        case renew(mint: Bool, reportGone: Int?)
        /// The stream ends; the loop rests until the next `begin`.
        case finish
    }

    private(set) var state: State = .idle
    /// 0.1 s doubling to 5 s between failed connects.
    private(set) var connectBackoff = Backoff.stream
    /// 0.5 s doubling to 60 s between failed renewals.
    private(set) var renewalBackoff = Backoff.outbox
    /// Starts the loop: its first action.
    mutating func start() -> Action {
        state = .connecting
        return .connect
    }

    /// What to do after `event`. An event that cannot happen in the current state (a report of the wrong action) ends the
    /// stream rather than guess: the machine rests.
    mutating func event(_ event: Event, using random: inout some RandomNumberGenerator) -> Action {
        switch (state, event) {
        case (.idle, .begin):
            return start()
        case (_, .begin):
            return .none
        case (.connecting, .connected):
            state = .streaming
            connectBackoff.reset()
            return .read
        case (.connecting, .refused), (.connecting, .failed), (.streaming, .failed):
            state = .waiting
            return .wait(connectBackoff.failed(using: &random), reconnecting: false)
        case (.connecting, .tokenGone(let status)):
            state = .renewing(minted: false)
            renewalBackoff.reset()
            return .renew(mint: true, reportGone: status)
        case (.streaming, .ended(let dead)):
            // A stream that was up and ended: a short jitter only, so devices that lost their streams together do not
            // come back together.
            state = .waiting
            return .wait(.milliseconds(Int.random(in: 20...100, using: &random)), reconnecting: dead)
        case (.waiting, .waitOver):
            state = .connecting
            return .connect
        case (.renewing, .renewed):
            state = .connecting
            renewalBackoff.reset()
            return .connect
        case (.renewing, .renewalFailed(let minted)):
            state = .renewalWaiting(minted: minted)
            return .wait(renewalBackoff.failed(using: &random), reconnecting: false)
        case (.renewalWaiting(let minted), .waitOver):
            state = .renewing(minted: minted)
            return .renew(mint: !minted, reportGone: nil)
        default:
            state = .idle
            return .finish
        }
    }

    mutating func halted() { self = PushStreamMachine() }

    var isIdle: Bool { state == .idle }
}

extension PushStreamMachine {
    /// ``event(_:using:)`` with the system's randomness.
    mutating func event(_ event: Event) -> Action {
        var random = SystemRandomNumberGenerator()
        return self.event(event, using: &random)
    }
}
