import Dispatch
import GRDB
import Synchronization

// The batching behind `SQLiteStore.readNow` (the lookups every mobile request makes): the group commit's shape, for reads.

/// One queued lookup: runs inside its batch's read transaction, then resumes its caller with its own result.
struct ReadJob<T: Sendable>: BatchedRead {
    let body: @Sendable (Database) throws -> T
    let continuation: CheckedContinuation<T, any Error>

    func run(_ db: Database) -> () -> Void {
        let result = Result { try body(db) }
        return { continuation.resume(with: result) }
    }

    func fail(_ error: any Error) {
        continuation.resume(throwing: error)
    }
}

/// What the read batcher runs, whatever each lookup returns.
protocol BatchedRead: Sendable {
    /// Runs the lookup in `db`'s open read transaction; returns what resumes its caller with the lookup's own result or
    /// error (called once the transaction has ended).
    func run(_ db: Database) -> () -> Void
    /// Resumes the caller with `error`: the batch's transaction failed before the lookup ran.
    func fail(_ error: any Error)
}

/// The batching queue behind `SQLiteStore.readNow`: one read transaction at a time on a serial queue of its own; the
/// lookups that arrive meanwhile go into the next.
final class ReadBatcher: Sendable {
    private let reader: any DatabaseReader
    private let state = Mutex(BatchQueue<any BatchedRead>())
    private let queue = DispatchQueue(label: "survey-trio.sqlite.lookups")
    /// Bounds one transaction, so a burst cannot hold one snapshot arbitrarily long.
    private let maxBatch = 512

    init(reader: any DatabaseReader) {
        self.reader = reader
    }

    var counts: (lookups: Int, batches: Int) { state.withLock { ($0.taken.jobs, $0.taken.batches) } }

    /// Lookups submitted and not yet taken into a batch.
    var waiting: Int { state.withLock { $0.pending.count } }

    func submit(_ job: any BatchedRead) {
        if state.withLock({ $0.add(job) }) {
            queue.async { self.drain() }
        }
    }

    private func drain() {
        while true {
            let batch = state.withLock { $0.next(max: maxBatch) }
            if batch.isEmpty { return }
            var resumes: [() -> Void] = []
            do {
                try reader.read { db in  // own-queue: the read batcher's serial queue, never a shared thread
                    for job in batch { resumes.append(job.run(db)) }
                }
            } catch {
                // The lookups that ran keep their own results; the others get the transaction's error.
                for job in batch.dropFirst(resumes.count) { job.fail(error) }
            }
            for resume in resumes { resume() }
        }
    }
}
