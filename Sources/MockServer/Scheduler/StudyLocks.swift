/// One async mutex per study: scheduling work for a study (ticks, clock moves, survey edits) runs one at a
/// time, while different studies proceed in parallel.
actor StudyLocks {
    private var held: Set<String> = []
    private var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]

    func lock(_ key: String) async {
        if !held.contains(key) {
            held.insert(key)
            return
        }
        await withCheckedContinuation { waiters[key, default: []].append($0) }
    }

    func unlock(_ key: String) {
        if var queue = waiters[key], !queue.isEmpty {
            let next = queue.removeFirst()
            waiters[key] = queue.isEmpty ? nil : queue
            next.resume()  // ownership passes to the next waiter
        } else {
            held.remove(key)
        }
    }

    /// Runs `body` holding the study's lock.
    nonisolated func withLock<T: Sendable>(_ key: String, _ body: @Sendable () async throws -> T) async throws -> T {
        await lock(key)
        do {
            let value = try await body()
            await unlock(key)
            return value
        } catch {
            await unlock(key)
            throw error
        }
    }
}
