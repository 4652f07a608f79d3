import Synchronization

/// When a push stream last showed a sign of life, and whether an event is being handled.
final class StreamWatch: Sendable {
    private struct State {
        var last = ContinuousClock.now
        var busy = false
    }
    private let state = Mutex(State())

    func touch() { state.withLock { $0.last = .now } }

    func busy(_ value: Bool) {
        state.withLock {
            $0.busy = value
            $0.last = .now
        }
    }

    func isSilent(for limit: Duration) -> Bool {
        state.withLock { !$0.busy && ContinuousClock.now - $0.last > limit }
    }
}
