import Synchronization

/// A value that tasks can wait on until it meets a condition: no polling, and no thread blocked while they wait (the
/// waiting task is suspended; `update` resumes it). A waiting task that is cancelled gets nil.
package final class ObservedValue<Value: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (Value) -> Bool
        let continuation: CheckedContinuation<Value?, Never>
    }

    private struct State {
        var value: Value
        var nextID: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        /// Waiters cancelled before they were registered.
        var cancelled: Set<UInt64> = []
    }

    private let state: Mutex<State>

    package init(_ value: Value) {
        state = Mutex(State(value: value))
    }

    /// The value now.
    package var value: Value { state.withLock { $0.value } }

    /// Changes the value and resumes every waiter whose condition it now meets.
    package func update(_ body: (inout Value) -> Void) {
        let ready: [(CheckedContinuation<Value?, Never>, Value)] = state.withLock { state in
            body(&state.value)
            let value = state.value
            let met = state.waiters.filter { $0.value.condition(value) }
            for id in met.keys { state.waiters[id] = nil }
            return met.values.map { ($0.continuation, value) }
        }
        for (continuation, value) in ready { continuation.resume(returning: value) }
    }

    /// The value once `condition` holds (at once if it holds now), or nil if the task is cancelled first.
    package func wait(until condition: @escaping @Sendable (Value) -> Bool) async -> Value? {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                let now: Value?? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .some(nil) }
                    if condition(state.value) { return .some(state.value) }
                    state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// The value once `condition` holds, or nil when `timeout` passes first (or the task is cancelled). The waiting task
    /// is suspended; no thread waits.
    package func wait(until condition: @escaping @Sendable (Value) -> Bool, timeout: Duration) async -> Value? {
        await withTaskGroup(of: Value?.self) { group in
            group.addTask { await self.wait(until: condition) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
