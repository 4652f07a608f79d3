/// Where the push stream resumes: the last push fully handled goes to the relay as `Last-Event-ID` on the next connect,
/// unless a push since then could not be handled (the relay would skip it too).
///
/// The client keeps it (its intake says what was handled), across stream loops: a stop and a start, a renewal. The
/// connection's own decisions are the loop's, in its ``PushStreamMachine``.
struct StreamResumePoint: Sendable, Equatable {
    /// The last relay message fully handled.
    private(set) var lastHandled: String?
    /// A push could not be handled since `lastHandled`: resume without `Last-Event-ID`, so the relay sends it again.
    private(set) var blocked = false

    /// The `Last-Event-ID` of the next connect.
    var lastEventID: String? { blocked ? nil : lastHandled }

    /// The push with this relay message id was fully handled (stored, withdrawn, or acked as a duplicate or a bad push).
    mutating func handled(_ messageID: String) {
        lastHandled = messageID
    }

    /// A push could not be handled yet: the next connect resumes without `Last-Event-ID`.
    mutating func failed() {
        blocked = true
    }

    /// A stream connected: the relay resends what was not acked, so a failure before it no longer blocks resuming.
    mutating func connected() {
        blocked = false
    }
}
