import SurveyWire

/// The pushes of the live stream whose surveys are being fetched, and what each fetch's outcome means.
///
/// A push is acked once every survey in it reached a *final* outcome: stored, or withdrawn (`/download_survey`
/// answered 404: the survey was deleted after the push went out; no retry can change that). A *transient* failure (a
/// 5xx, a transport error) keeps the push here with a backoff, and it is fetched again on the live stream when its
/// wait is over, rather than only after the connection happens to drop. The relay holds back the rest of a backlog
/// while pushes are unacked, so a push that could never be acked (ten deleted surveys) used to stall a device until
/// the messages expired; now such pushes are acked at once.
///
/// A value type: the client performs the fetches and acks it returns, and reports their outcomes back.
struct PushIntake: Sendable {
    enum Outcome: Sendable, Equatable {
        case stored
        case withdrawn
        case failed
    }

    /// What to do with a push just received.
    enum Arrival: Sendable, Equatable {
        /// Already handled (its nonce, or every occurrence in it): ack it and move on.
        case duplicate
        /// Fetch these surveys (in the push's order).
        case fetch([String])
        /// Still being fetched or waiting for a retry (the relay sent it again): nothing to do.
        case inProgress
    }

    /// What the outcomes of one attempt mean for its push.
    enum Completion: Sendable, Equatable {
        /// Every survey is stored or withdrawn: ack the push.
        case done
        /// Some failed; the push is fetched again after `after`. `firstFailure` is true the first time (the error is
        /// reported once, not on every retry).
        case retry(after: Duration, firstFailure: Bool)
    }

    struct Pending: Sendable {
        var push: SurveyPush
        /// Surveys of the push not yet stored or withdrawn.
        var remaining: [String]
        var backoff = Backoff.fetch
        /// When the next attempt is due (nil while an attempt runs).
        var due: ContinuousClock.Instant?
    }

    /// The most pushes kept for retries (the relay has at most `--ack-batch`, 10 by default, unacked at once).
    static let maxPending = 100

    private(set) var pending: [String: Pending] = [:]

    /// A push from the stream. `handled` tells whether occurrences were shown before (remembered or stored).
    mutating func received(messageID: String, push: SurveyPush, nonceSeen: Bool, handled: ([String]) -> Bool) -> Arrival {
        if pending[messageID] != nil { return .inProgress }
        if nonceSeen || handled(push.allUUIDs) { return .duplicate }
        // Surveys shown by an earlier delivery of this push (the rest of it failed then) are not fetched again.
        let remaining = push.surveyIDs.filter { !handled(push.surveyUUIDs[$0] ?? []) }
        if remaining.isEmpty { return .duplicate }
        if pending.count >= Self.maxPending, let oldest = pending.min(by: { ($0.value.due ?? .now) < ($1.value.due ?? .now) })?.key {
            // Unbounded growth is worse than forgetting the stalest retry: the relay sends it again after a reconnect.
            pending[oldest] = nil
        }
        pending[messageID] = Pending(push: push, remaining: remaining)
        return .fetch(remaining)
    }

    /// The push being fetched under `messageID`.
    func push(_ messageID: String) -> SurveyPush? { pending[messageID]?.push }

    /// The outcomes of one attempt at `messageID`'s remaining surveys.
    mutating func fetched(messageID: String, outcomes: [String: Outcome], now: ContinuousClock.Instant,
                          random: inout some RandomNumberGenerator) -> Completion {
        guard var entry = pending[messageID] else { return .done }
        entry.remaining.removeAll { outcomes[$0] == .stored || outcomes[$0] == .withdrawn }
        if entry.remaining.isEmpty {
            pending[messageID] = nil
            return .done
        }
        let first = entry.backoff.failures == 0
        let wait = entry.backoff.failed(using: &random)
        entry.due = now + wait
        pending[messageID] = entry
        return .retry(after: wait, firstFailure: first)
    }

    /// Pushes whose retry is due, with the surveys to fetch; each is marked as being attempted.
    mutating func takeDue(now: ContinuousClock.Instant) -> [(messageID: String, surveys: [String])] {
        var due: [(String, [String])] = []
        for (id, entry) in pending.sorted(by: { $0.key < $1.key }) {
            guard let at = entry.due, at <= now else { continue }
            pending[id]?.due = nil
            due.append((id, entry.remaining))
        }
        return due
    }

    /// When the next retry is due, if any waits.
    var nextDue: ContinuousClock.Instant? { pending.values.compactMap(\.due).min() }

    /// The stream ended: every unacked push comes again on the next connection, and is taken afresh then.
    mutating func streamEnded() { pending = [:] }
}
