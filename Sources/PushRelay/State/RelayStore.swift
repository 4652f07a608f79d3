import Foundation
import GRDB
import Synchronization
import SurveyWire

/// `--store PATH`: the relay's devices, their pending messages and retired tokens in SQLite. Changes are written by an
/// asynchronous group-committing writer, never on the thread that made them: the relay's routes run on NIO event loops,
/// which must not wait for SQLite (an auto-checkpoint's fsync on a slow disk stalled every stream on the loop). A
/// change is queued in order (``save(_:)``, ``retire(_:at:)``, ``wipe()``); what queues while one transaction commits
/// goes into the next one, a device's latest state only; when changes arrive less than ``commitWindow`` (3 ms) apart, a
/// change that finds the writer idle waits that long for more. A route that must answer "kept" awaits ``committed()``, which
/// returns once everything queued before it is on disk (or throws what the commit threw). A relay restart (or a kill)
/// loses no change that was answered. The trace and the fault settings are not kept.
final class RelayStore: Sendable {
    private enum Change: Sendable {
        /// Encoded on the writer's queue, and only when no later save of the device in the same batch supersedes it.
        case save(token: String, state: DeviceState)
        case retire(token: String, at: Int64)
        case wipe
    }

    private struct Waiter {
        let sequence: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var pending: [Change] = []
        /// Changes queued so far (the sequence number of the last one).
        var queued: UInt64 = 0
        /// Everything up to this sequence number has been through a commit (committed or failed).
        var done: UInt64 = 0
        /// The newest failed batch: changes up to `through` that were in it answer its error.
        var failure: (from: UInt64, through: UInt64, error: any Error)?
        var draining = false
        var waiters: [Waiter] = []
        var commits = 0
        /// When the last change was queued: a change that follows another within ``RelayStore/commitWindow`` and finds
        /// the writer idle waits the window for company.
        var lastQueued: ContinuousClock.Instant?

        /// How a wait for the changes up to `sequence` ends, once known: the failed batch's error if it held them, else
        /// success once they have been through a commit; nil while they are still queued or committing.
        func outcome(_ sequence: UInt64) -> Result<Void, any Error>? {
            if let failure, (failure.from...failure.through).contains(sequence) { return .failure(failure.error) }
            return done >= sequence ? .success(()) : nil
        }
    }

    private let queue: DatabaseQueue
    private let state = Mutex(State())
    /// Bounds one transaction.
    private let maxBatch = 4096

    /// Opens (creating) the store file; parent directories are created. Runs at start-up, before any connection.
    init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        var configuration = Configuration()
        // WAL with synchronous NORMAL: a committed change survives the process dying (not a power cut).
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE device (token TEXT PRIMARY KEY, state BLOB NOT NULL);
                CREATE TABLE retired (token TEXT PRIMARY KEY, at INTEGER NOT NULL);
                """)
        }
        try migrator.migrate(queue)  // startup-only: before the relay listens
    }

    /// Transactions committed since start (each holds every change queued while the one before committed).
    var commits: Int { state.withLock { $0.commits } }

    /// Everything stored: devices (disconnected) and retired tokens. A row that cannot be read is skipped and named.
    /// Synchronous: called once at start-up, before the relay serves (no event loop or task is waiting on it).
    func load() throws -> (devices: [String: DeviceState], retired: [String: Int64], unreadable: [String]) {
        try queue.read { db in  // startup-only: the hub loads once, before the relay listens
            var devices: [String: DeviceState] = [:]
            var unreadable: [String] = []
            for row in try Row.fetchAll(db, sql: "SELECT token, state FROM device") {
                let token: String = row["token"]
                let data: Data = row["state"]
                if var device = try? JSONDecoder().decode(DeviceState.self, from: data) {
                    device.disconnect()
                    devices[token] = device
                } else {
                    unreadable.append(token)
                }
            }
            var retired: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT token, at FROM retired") { retired[row["token"]] = row["at"] }
            return (devices, retired, unreadable)
        }
    }

    /// Queues devices' whole states (a copy of each value; the encoding happens on the writer's queue).
    func save(_ devices: [DeviceState]) {
        enqueue(devices.map { Change.save(token: $0.token, state: $0) })
    }

    /// Queues a token's retirement (rotated away or uninstalled): its device row goes, the retired row stays.
    func retire(_ token: String, at: Int64) {
        enqueue([.retire(token: token, at: at)])
    }

    /// Queues the removal of everything.
    func wipe() {
        enqueue([.wipe])
    }

    /// Returns once every change queued before the call has been committed; throws the commit's error when the
    /// transaction holding one of them failed.
    func committed() async throws {
        if let ready = state.withLock({ $0.outcome($0.queued) }) { return try ready.get() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let now: Result<Void, any Error>? = state.withLock { s in
                if let known = s.outcome(s.queued) { return known }
                s.waiters.append(Waiter(sequence: s.queued, continuation: continuation))
                return nil
            }
            if let now { continuation.resume(with: now) }
        }
    }

    private func enqueue(_ changes: [Change]) {
        guard !changes.isEmpty else { return }
        let now = ContinuousClock.now
        // nil: the writer is draining and takes these next; else whether to wait the window before starting it.
        let wait = state.withLock { s -> Bool? in
            s.pending.append(contentsOf: changes)
            s.queued += UInt64(changes.count)
            let recent = s.lastQueued.map { now - $0 < Self.commitWindow } ?? false
            s.lastQueued = now
            if s.draining { return nil }
            s.draining = true
            return recent
        }
        switch wait {
        case nil: return
        case true?:
            DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(Self.commitWindow / .microseconds(1)))) { self.drainNext() }
        case false?: drainNext()
        }
    }

    /// How long a change that finds the writer idle, less than this after the change before it, waits to share its
    /// transaction: under load each change otherwise committed alone (at 2,000 deliveries/s two transactions per
    /// delivery, each a wake-up of the writer and of the loops waiting on it). A route that answers "kept" answers up
    /// to this much later when changes come that fast; deliveries do not wait for it (a stream is written before the
    /// commit), and a change after a quiet moment commits at once.
    static let commitWindow: Duration = .milliseconds(3)

    /// Takes the next batch and writes it on GRDB's own queue (`asyncWrite`); its completion takes the batch after it.
    private func drainNext() {
        let batch = state.withLock { s -> (changes: [Change], through: UInt64)? in
            guard !s.pending.isEmpty else {
                s.draining = false
                return nil
            }
            let take = min(s.pending.count, maxBatch)
            let changes = Array(s.pending.prefix(take))
            s.pending.removeFirst(take)
            return (changes, s.done + UInt64(take))
        }
        guard let batch else { return }
        let rows = Self.coalesce(batch.changes)
        queue.asyncWrite({ db in
            let encoder = JSONEncoder()
            for change in rows {
                switch change {
                case .save(let token, let state):
                    let data = try encoder.encode(state)
                    // Cached statements: SQLite parses each once per connection, not once per row. An upsert updates
                    // the row where it is (one page); `INSERT OR REPLACE` deleted it and inserted it again with a new
                    // rowid, writing the old row's page, the last page and the token's index page.
                    try db.cachedStatement(sql: "INSERT INTO device (token, state) VALUES (?, ?) ON CONFLICT (token) DO UPDATE SET state = excluded.state")
                        .execute(arguments: [token, data])
                case .retire(let token, let at):
                    try db.cachedStatement(sql: "DELETE FROM device WHERE token = ?").execute(arguments: [token])
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO retired (token, at) VALUES (?, ?)").execute(arguments: [token, at])
                case .wipe:
                    try db.execute(sql: "DELETE FROM device")
                    try db.execute(sql: "DELETE FROM retired")
                }
            }
        }, completion: { [self] _, result in
            finish(through: batch.through, count: batch.changes.count, result: result)
            drainNext()
        })
    }

    private func finish(through: UInt64, count: Int, result: Result<Void, any Error>) {
        let resumed = state.withLock { s -> [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] in
            s.done = through
            if case .failure(let error) = result {
                s.failure = (through - UInt64(count) + 1, through, error)
                FileHandle.standardError.write(Data("push-relay: store write failed: \(error)\n".utf8))
            } else {
                s.commits += 1
            }
            var out: [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] = []
            var waiting: [Waiter] = []
            for waiter in s.waiters {
                if let outcome = s.outcome(waiter.sequence) { out.append((waiter.continuation, outcome)) } else { waiting.append(waiter) }
            }
            s.waiters = waiting
            return out
        }
        for (continuation, value) in resumed { continuation.resume(with: value) }
    }

    /// A batch with only each device's last saved state (a device saved ten times in a batch is written once), in order.
    private static func coalesce(_ changes: [Change]) -> [Change] {
        var lastSave: [String: Int] = [:]
        for (index, change) in changes.enumerated() {
            switch change {
            case .save(let token, _): lastSave[token] = index
            case .retire(let token, _): lastSave[token] = nil
            case .wipe: lastSave = [:]
            }
        }
        return changes.enumerated().compactMap { index, change in
            if case .save(let token, _) = change, lastSave[token] != index {
                // Superseded by a later save of the same device, or by its retirement or a wipe after it.
                return nil
            }
            return change
        }
    }
}
