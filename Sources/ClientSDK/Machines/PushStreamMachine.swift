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
/// any state ──stop──▶ stopped
/// ```
///
/// Each loop the client starts gets a run number from ``start()``; an event from an older run (a loop that was
/// cancelled by `stop()` and had not ended yet when the client started again) is answered with ``Action/finish`` and
/// changes nothing, so two loops can never share one stream's state.
///
/// The machine also keeps the resume point: the last push fully handled goes to the relay as `Last-Event-ID` on the
/// next connect, unless a push since then could not be handled (the relay would skip it too).
struct PushStreamMachine: Sendable {
    enum State: Sendable, Equatable {
        /// No loop runs (never started, or stopped).
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
        /// Open the stream on the token in use, with this `Last-Event-ID`.
        case connect(lastEventID: String?)
        /// The stream is up: read it until it ends, then report ``Event/ended(dead:)`` (or ``Event/failed``).
        case read
        /// Wait, then report ``Event/waitOver``. `reconnecting`: tell the app the stream went silent first.
        case wait(Duration, reconnecting: Bool)
        /// Renew the token: mint a new one (when `mint`), tell the server, then report ``Event/renewed`` or
        /// ``Event/renewalFailed(minted:)``. `reportGone`: the status that said the token is gone, to report once.
        case renew(mint: Bool, reportGone: Int?)
        /// End the loop.
        case finish
    }

    private(set) var state: State = .idle
    /// The current loop's number (0: none yet).
    private(set) var run = 0
    /// 0.1 s doubling to 5 s between failed connects.
    private(set) var connectBackoff = Backoff.stream
    /// 0.5 s doubling to 60 s between failed renewals.
    private(set) var renewalBackoff = Backoff.outbox
    /// The last relay message fully handled.
    private(set) var lastHandled: String?
    /// A push could not be handled since `lastHandled`: resume without `Last-Event-ID`, so the relay sends it again.
    private(set) var resumeBlocked = false

    /// The `Last-Event-ID` of the next connect.
    var resumePoint: String? { resumeBlocked ? nil : lastHandled }

    /// True while a loop runs.
    var isRunning: Bool { state != .idle }

    /// Starts a new loop (the previous one, if any, is forgotten): its run number and first action.
    mutating func start() -> (run: Int, action: Action) {
        run += 1
        state = .connecting
        connectBackoff.reset()
        renewalBackoff.reset()
        return (run, .connect(lastEventID: resumePoint))
    }

    /// The loop was stopped: nothing of it goes on, and a later ``start()`` begins afresh.
    mutating func stop() {
        state = .idle
    }

    /// What to do after `event` happened to loop `run`. An event of another run, or one that cannot happen in the current
    /// state, ends the loop that reported it and changes nothing.
    mutating func event(_ event: Event, run: Int, using random: inout some RandomNumberGenerator) -> Action {
        guard run == self.run else { return .finish }
        switch (state, event) {
        case (.connecting, .connected):
            state = .streaming
            connectBackoff.reset()
            // A new connection: the relay resends what was not acked, so a failure before it no longer blocks resuming.
            resumeBlocked = false
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
            return .connect(lastEventID: resumePoint)
        case (.renewing, .renewed):
            state = .connecting
            renewalBackoff.reset()
            return .connect(lastEventID: resumePoint)
        case (.renewing, .renewalFailed(let minted)):
            state = .renewalWaiting(minted: minted)
            return .wait(renewalBackoff.failed(using: &random), reconnecting: false)
        case (.renewalWaiting(let minted), .waitOver):
            state = .renewing(minted: minted)
            return .renew(mint: !minted, reportGone: nil)
        default:
            return .finish
        }
    }

    /// The push with this relay message id was fully handled (stored, withdrawn, or acked as a duplicate or a bad push).
    mutating func handled(_ messageID: String) {
        lastHandled = messageID
    }

    /// A push could not be handled yet: the next connect resumes without `Last-Event-ID`.
    mutating func handleFailed() {
        resumeBlocked = true
    }
}

extension PushStreamMachine {
    /// ``event(_:run:using:)`` with the system's randomness.
    mutating func event(_ event: Event, run: Int) -> Action {
        var random = SystemRandomNumberGenerator()
        return self.event(event, run: run, using: &random)
    }
}
