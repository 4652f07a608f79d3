import Dispatch
import GRDB
import Synchronization

// The batching behind `SQLiteStore.readNow` (the lookups every mobile request makes): the group commit's shape, for reads.

/// One queued lookup: runs inside its batch's read transaction, then resumes its caller with its own result.
final class ReadJob<T: Sendable>: @unchecked Sendable {
    // `result` is written by `run` and read by `finish`, both on the read batcher's serial queue, one after the other.
    private let body: @Sendable (Database) throws -> T
    private let continuation: CheckedContinuation<T, any Error>
    private var result: Result<T, any Error>?

    init(body: @escaping @Sendable (Database) throws -> T, continuation: CheckedContinuation<T, any Error>) {
        self.body = body
        self.continuation = continuation
    }
}

/// What the read batcher runs, whatever each lookup returns.
protocol BatchedRead: Sendable {
    /// Runs the lookup in `db`'s open read transaction, keeping its result or error.
    func run(_ db: Database)
    /// Resumes the caller: with the lookup's own result, or `batchError` if the batch's transaction failed first.
    func finish(batchError: (any Error)?)
}

extension ReadJob: BatchedRead {
    func run(_ db: Database) {
        result = Result { try body(db) }
    }

    func finish(batchError: (any Error)?) {
        continuation.resume(with: result ?? .failure(batchError ?? CancellationError()))
    }
}

/// The batching queue behind `SQLiteStore.readNow`: one read transaction at a time on a serial queue of its own; the
/// lookups that arrive meanwhile go into the next.
final class ReadBatcher: Sendable {
    private struct State {
        var pending: [any BatchedRead] = []
        var draining = false
        var lookups = 0
        var batches = 0
    }

    private let reader: any DatabaseReader
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "survey-trio.sqlite.lookups")
    /// Bounds one transaction, so a burst cannot hold one snapshot arbitrarily long.
    private let maxBatch = 512

    init(reader: any DatabaseReader) {
        self.reader = reader
    }

    var counts: (lookups: Int, batches: Int) { state.withLock { ($0.lookups, $0.batches) } }

    /// Lookups submitted and not yet taken into a batch.
    var waiting: Int { state.withLock { $0.pending.count } }

    func submit(_ job: any BatchedRead) {
        let start = state.withLock { s -> Bool in
            s.pending.append(job)
            if s.draining { return false }
            s.draining = true
            return true
        }
        if start {
            queue.async { self.drain() }
        }
    }

    private func drain() {
        while true {
            let batch = state.withLock { s -> [any BatchedRead] in
                if s.pending.isEmpty {
                    s.draining = false
                    return []
                }
                let take = min(s.pending.count, maxBatch)
                let batch = Array(s.pending.prefix(take))
                s.pending.removeFirst(take)
                s.lookups += take
                s.batches += 1
                return batch
            }
            if batch.isEmpty { return }
            do {
                try reader.read { db in  // own-queue: the read batcher's serial queue, never a shared thread
                    for job in batch { job.run(db) }
                }
                for job in batch { job.finish(batchError: nil) }
            } catch {
                for job in batch { job.finish(batchError: error) }
            }
        }
    }
}
