/// The queue behind the store's batchers (the group commit and the batched lookups): jobs wait here while one batch
/// runs, and the next batch takes what waited. A value type; each batcher holds it in a `Mutex` and runs the batches.
struct BatchQueue<Job> {
    private(set) var pending: [Job] = []
    /// Whether a drain is running (taking batches until none is left).
    private(set) var draining = false
    /// Jobs taken into batches, and the batches, since the queue was made.
    private(set) var taken = (jobs: 0, batches: 0)

    /// Queues `job`; true when no drain was running, so the caller must start one.
    mutating func add(_ job: Job) -> Bool {
        pending.append(job)
        if draining { return false }
        draining = true
        return true
    }

    /// The next batch, at most `max` jobs in arrival order; empty when none waits, which ends the drain (the next
    /// ``add(_:)`` starts another).
    mutating func next(max: Int) -> [Job] {
        if pending.isEmpty {
            draining = false
            return []
        }
        let take = min(pending.count, max)
        let batch = Array(pending.prefix(take))
        pending.removeFirst(take)
        taken.jobs += take
        taken.batches += 1
        return batch
    }
}
