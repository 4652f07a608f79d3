/// Async readers–writer locks by key, first come first served: scheduling work for a study (ticks, clock moves,
/// survey edits) holds its study's key exclusively; planning one participant holds it shared, so registrations in one
/// study plan side by side, never beside a study-wide walk. A waiting exclusive request stops later shared ones from
/// overtaking it (a busy study's ticks are not starved by a stream of registrations). Different keys are independent.
actor StudyLocks {
    private enum Mode { case shared, exclusive }

    private struct Entry {
        /// Shared holders now (0 when free or held exclusively).
        var readers = 0
        var writer = false
        var queue: [(mode: Mode, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private var entries: [String: Entry] = [:]


    private func acquire(_ key: String, _ mode: Mode) async {
        var entry = entries[key] ?? Entry()
        let free = mode == .shared ? !entry.writer && entry.queue.isEmpty : !entry.writer && entry.readers == 0 && entry.queue.isEmpty
        if free {
            if mode == .shared { entry.readers += 1 } else { entry.writer = true }
            entries[key] = entry
            return
        }
        await withCheckedContinuation { continuation in
            entries[key, default: Entry()].queue.append((mode, continuation))
        }
        // Ownership was handed over by `release` before resuming.
    }

    private func release(_ key: String, _ mode: Mode) {
        guard var entry = entries[key] else { return }
        if mode == .shared { entry.readers -= 1 } else { entry.writer = false }
        // Hand over in arrival order: one exclusive waiter once nobody holds the key, or every shared waiter up to the
        // next exclusive one.
        var resumed: [CheckedContinuation<Void, Never>] = []
        while let next = entry.queue.first, !entry.writer {
            if next.mode == .exclusive {
                guard entry.readers == 0 else { break }
                entry.writer = true
            } else {
                entry.readers += 1
            }
            entry.queue.removeFirst()
            resumed.append(next.continuation)
        }
        entries[key] = entry.readers == 0 && !entry.writer && entry.queue.isEmpty ? nil : entry
        for continuation in resumed { continuation.resume() }
    }

    /// Runs `body` holding the key exclusively.
    nonisolated func withLock<T: Sendable>(_ key: String, _ body: @Sendable () async throws -> T) async throws -> T {
        try await holding(key, .exclusive, body)
    }

    /// Runs `body` holding the study's key shared and the participant's own key exclusively (always in that order):
    /// participants of one study side by side, one request at a time for each, never beside a walk of the study.
    nonisolated func withParticipantLock<T: Sendable>(studyID: String, patientID: String,
                                                      _ body: @Sendable () async throws -> T) async throws -> T {
        // The participant's key cannot collide with a study id (ids never contain NUL).
        try await holding(studyID, .shared) { try await self.holding("participant\u{0}" + patientID, .exclusive, body) }
    }

    private nonisolated func holding<T: Sendable>(_ key: String, _ mode: Mode, _ body: @Sendable () async throws -> T) async throws -> T {
        await acquire(key, mode)
        do {
            let value = try await body()
            await release(key, mode)
            return value
        } catch {
            await release(key, mode)
            throw error
        }
    }
}
