import Foundation
import GRDB
import Prometheus
import ServerSupport
import Synchronization

/// The server's SQLite store (the embedded default). Every write is all-or-nothing (its own savepoint inside a committed
/// transaction), so a crash leaves either all or none of a request's changes.
///
/// Writes are group-committed: while one transaction is committing, the writes that arrive queue up and go
/// into the next transaction together, each in its own savepoint (one failing rolls back only itself).
/// `write` returns only after the transaction holding its changes has committed, so a 200 still means the
/// change is on disk, but concurrent requests share one commit (one WAL sync) instead of paying one each.
final class SQLiteStore: Store {
    let writer: any DatabaseWriter
    let location: StoreLocation
    private let batcher: WriteBatcher
    private let lookups: ReadBatcher

    /// In-process study locks: a SQLite file has one server process.
    let locks = StudyLocks()

    /// Opens (creating and migrating) the store; `metrics` gets `sqlite_writes_total` and `sqlite_commits_total`.
    init(_ location: StoreLocation, metrics: ServerMetrics? = nil) throws {
        self.location = location
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        switch location {
        case .memory:
            writer = try DatabaseQueue(configuration: config)
        case .file(let path):
            try Self.prepareFile(path)
            let pool = try DatabasePool(path: path, configuration: config)
            // GRDB opens a pool in WAL mode with `synchronous = NORMAL`, which syncs the WAL only at checkpoints: a
            // commit survives the process dying but not the machine. FULL syncs the WAL at every commit, so a 200 means
            // the change is on disk. (Set after the pool is open: GRDB's WAL set-up runs after `prepareDatabase`.)
            // Only the writer's connection commits.
            // startup-only: the store opens before the server listens.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            writer = pool
        case .postgres:
            preconditionFailure("a PostgreSQL location opens a PostgresStore")
        }
        try Schema.migrator().migrate(writer)  // startup-only: before the server listens
        batcher = WriteBatcher(writer: writer, metrics: metrics)
        lookups = ReadBatcher(reader: writer)
    }

    /// The database holds private keys and password records: directories it creates are 0700, and the file is 0600
    /// (created so before SQLite opens it; SQLite gives its `-wal` and `-shm` files the same mode).
    static func prepareFile(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
            }
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
    }

    func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await writer.read(body)
    }

    /// Runs a short read for the lookups every mobile request makes, batched with the others waiting: the lookups that
    /// arrive while one batch runs go into the next, all in one read transaction (one snapshot taken after each of them
    /// arrived) on the store's own serial queue. A batch costs one wake-up of that queue and one check of the WAL,
    /// where GRDB's async read cost each lookup three hand-offs between threads and, after any commit, re-reading its
    /// pages (`perf stat` on the pinned server under wrk: 4.4 context switches and 6.2 `pread`s per registration before).
    ///
    /// It never blocks the calling thread: the synchronous read runs on the batcher's queue, not on Swift's cooperative
    /// pool or an event loop. (A synchronous read on a cooperative thread parked it on the reader pool's semaphore while
    /// the readers' holders needed those threads to give them back: twenty phones deadlocked the server.)
    func readNow<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            lookups.submit(ReadJob(body: body, continuation: continuation))
        }
    }

    /// Runs `body` in its own savepoint of the next group commit; returns after that commit.
    func write<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = WriteJob(body: body, continuation: continuation)
            batcher.submit(job)
        }
    }

    /// Writes committed and transactions used since start: the batching ratio, for `/metrics` and benchmarks.
    var writeCounts: (writes: Int, commits: Int) { batcher.counts }

    /// Lookups run by ``readNow`` and the read transactions (batches) they took since start.
    var lookupCounts: (lookups: Int, batches: Int) { lookups.counts }

    /// Lookups waiting for the next batch.
    var lookupsWaiting: Int { lookups.waiting }

    func close() async {}
}

/// One queued write: runs inside the batch's transaction, then learns whether that transaction committed.
private protocol BatchedWrite: Sendable {
    /// Runs the write in a savepoint of `db`'s open transaction, keeping its result or error.
    func run(_ db: Database)
    /// Resumes the caller: with the write's own result if the batch committed, else with `commitError`.
    func finish(commitError: (any Error)?)
}

private final class WriteJob<T: Sendable>: BatchedWrite, @unchecked Sendable {
    // `result` is written by `run` on the writer's queue and read by `finish` after that queue's
    // transaction returned, so the two never overlap.
    private let body: @Sendable (Database) throws -> T
    private let continuation: CheckedContinuation<T, any Error>
    private var result: Result<T, any Error>?

    init(body: @escaping @Sendable (Database) throws -> T, continuation: CheckedContinuation<T, any Error>) {
        self.body = body
        self.continuation = continuation
    }

    func run(_ db: Database) {
        var value: T?
        do {
            try db.inSavepoint {
                value = try body(db)
                return .commit
            }
            result = .success(value!)
        } catch {
            result = .failure(error)
        }
    }

    func finish(commitError: (any Error)?) {
        if let commitError {
            continuation.resume(throwing: commitError)
        } else {
            continuation.resume(with: result ?? .failure(CancellationError()))
        }
    }
}

/// The group-commit queue behind `Store.write`: at most one transaction in flight; everything that arrives
/// meanwhile goes into the next one.
private final class WriteBatcher: Sendable {
    private struct State {
        var queue = BatchQueue<any BatchedWrite>()
        var writes = 0
        var commits = 0
    }

    private let writer: any DatabaseWriter
    private let state = Mutex(State())
    private let writeCounter: Counter?
    private let commitCounter: Counter?
    /// Bounds one transaction, so a burst cannot build an arbitrarily long one.
    private let maxBatch = 512

    init(writer: any DatabaseWriter, metrics: ServerMetrics?) {
        self.writer = writer
        writeCounter = metrics?.registry.makeCounter(name: "sqlite_writes_total", help: "Write requests committed (each in its own savepoint)")
        commitCounter = metrics?.registry.makeCounter(name: "sqlite_commits_total", help: "SQLite transactions committed by the group-commit queue")
    }

    var counts: (writes: Int, commits: Int) { state.withLock { ($0.writes, $0.commits) } }

    func submit(_ job: any BatchedWrite) {
        if state.withLock({ $0.queue.add(job) }) {
            Task { await self.drain() }
        }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { $0.queue.next(max: maxBatch) }
            if batch.isEmpty { return }
            do {
                try await writer.write { db in
                    for job in batch { job.run(db) }
                }
                state.withLock {
                    $0.writes += batch.count
                    $0.commits += 1
                }
                writeCounter?.increment(by: Int64(batch.count))
                commitCounter?.increment()
                for job in batch { job.finish(commitError: nil) }
            } catch {
                for job in batch { job.finish(commitError: error) }
            }
        }
    }
}
