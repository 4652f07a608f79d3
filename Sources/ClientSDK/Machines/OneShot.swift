import Synchronization

/// A one-shot signal: `wait()` returns once `fire()` was called (before or after). Safe to fire from a cancellation
/// handler, so `run()` needs no task of its own to learn that its caller was cancelled; a background job's stop and end
/// are two of them.
final class OneShot: Sendable {
    private struct State {
        var fired = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func fire() {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { state in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if fired { continuation.resume() }
        }
    }

    var isFired: Bool { state.withLock { $0.fired } }
}
