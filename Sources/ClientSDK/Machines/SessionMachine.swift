import Foundation

/// The app session's decisions: the app is in the foreground between `start()` or `resume()` and `pause()` or `stop()`;
/// each session has an id (message impressions count once per session), a start time (the `baseline` ping's duration)
/// and a number, which its MMA heartbeat loop carries.
///
/// A value type: the client feeds it events on its actor and performs the action it returns. The number is what keeps
/// a heartbeat in its session: a loop of a session that ended may still be waiting for the actor when the session ends
/// (its tick had begun), and without it that tick recorded an MMA `heartbeat` after the `pauseSession`, or in the next
/// session while that session's own loop ran too.
struct SessionMachine: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// In the background (made, paused or stopped).
        case inactive
        /// In the foreground since `started`; `number` counts sessions in this client's life, from 1.
        case active(number: Int, started: Date)
    }

    enum Event: Sendable, Equatable {
        /// `start()` (`startup`) or `resume()`: a session with the id `id` would begin now.
        case began(startup: Bool, id: String, at: Date)
        /// `pause()` or `stop()`.
        case ended(at: Date)
        /// The heartbeat loop of session `session` woke.
        case heartbeatDue(session: Int)
    }

    enum Action: Sendable, Equatable {
        /// Nothing (a session was already open, or none was).
        case none
        /// A session opened: record it (MMA `start` at startup, else `resumeSession`), make the `baseline` ping
        /// (`active`) and start the heartbeat loop of `session`.
        case open(session: Int, startup: Bool)
        /// The session ended after `seconds`: MMA `pauseSession`, the `baseline` (`inactive`, with the duration) and
        /// `events` (`inactive`) pings, the heartbeat loop ended.
        case close(seconds: Int)
        /// Record MMA `heartbeat`; the loop waits for its next one.
        case heartbeat
        /// The loop's session is over: the loop ends without recording.
        case endHeartbeat
    }

    private(set) var state = State.inactive
    /// The current session's id; before the first session, one made with the client (messages shown before a session
    /// still count once).
    private(set) var id: String
    private var count = 0

    init(id: String) {
        self.id = id
    }

    /// True while a session is open.
    var isActive: Bool {
        if case .active = state { return true }
        return false
    }

    /// Feeds an event; returns what to do.
    mutating func event(_ event: Event) -> Action {
        switch (state, event) {
        case (.inactive, .began(let startup, let newID, let now)):
            count += 1
            id = newID
            state = .active(number: count, started: now)
            return .open(session: count, startup: startup)
        case (.active, .began):
            return .none
        case (.active(_, let started), .ended(let now)):
            state = .inactive
            // A clock set back during the session counts as no time, not as a negative duration.
            return .close(seconds: max(0, Int(now.timeIntervalSince(started))))
        case (.inactive, .ended):
            return .none
        case (.active(let number, _), .heartbeatDue(let session)) where session == number:
            return .heartbeat
        case (.active, .heartbeatDue), (.inactive, .heartbeatDue):
            return .endHeartbeat
        }
    }
}
