import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Prometheus
import ServerSupport
import Synchronization

/// The server's PostgreSQL store: several mock-server instances on one database are one deployment.
///
/// Every change is one transaction, committed (with PostgreSQL's default `synchronous_commit`) before the method
/// returns, so a 200 means it is durable, as on SQLite. Scheduling work for a study takes a session advisory lock
/// keyed by the study (``withStudyLock(_:wait:_:)``): one instance at a time walks a study's due moments, so each
/// due occurrence is pushed once across instances. The lock is held on a pooled connection for the work's length;
/// an instance that dies (even by SIGKILL) closes that connection and PostgreSQL releases the lock at once, so
/// another instance's next tick sends what the dead one had not recorded as sent. Planning one participant (a
/// registration in a server-scheduled study) takes the same key shared and the participant's key exclusively
/// (``withParticipantLock(studyID:patientID:_:)``), so registrations plan side by side on every instance.
/// The mobile API's hot statements are prepared (``ParticipantAndStudyStatement``, ``RegisterStatement``).
///
/// Advisory locks are held on connections of their own pool (``lockClient``), never on the pool the work's queries
/// use: a lock holder waits only for query connections, which no lock holder keeps, so holders cannot take every
/// connection and wait for each other (8 clock moves on 8 studies with a pool of 8 wedged the instance for good
/// when both shared one pool).
final class PostgresStore: Store {
    let location: StoreLocation
    let client: PostgresClient
    /// Holds the advisory locks (one connection per lock held); queries never run here.
    let lockClient: PostgresClient
    let logger: Logger
    /// Within this process, one waiter per study asks PostgreSQL (the rest queue here, holding no connection).
    private let locks = StudyLocks()
    /// Drive the two connection pools until ``close()``.
    private let runner: Task<Void, Never>
    private let lockRunner: Task<Void, Never>
    private let counts = Mutex((writes: 0, commits: 0))
    private let writeCounter: Counter?

    /// Connects, creates the schema (or brings it up to date) and returns the store. Throws a readable error when the
    /// server cannot be reached or refuses the login.
    /// `metrics` gets `postgres_writes_total` (each write is its own transaction).
    static func open(_ url: PostgresURL, metrics: ServerMetrics?, logger: Logger) async throws -> PostgresStore {
        let store = try PostgresStore(url, metrics: metrics, logger: logger)
        do {
            try await store.migrate()
        } catch {
            await store.close()
            throw PostgresStoreError.describe(error, url: url)
        }
        return store
    }

    private init(_ url: PostgresURL, metrics: ServerMetrics?, logger: Logger) throws {
        location = .postgres(url)
        writeCounter = metrics?.registry.makeCounter(name: "postgres_writes_total", help: "Write transactions committed to PostgreSQL")
        self.logger = logger
        let tls: PostgresClient.Configuration.TLS
        switch url.sslMode {
        case "disable": tls = .disable
        case "require": tls = .require(TLSConfiguration.makeClientConfiguration())
        default: tls = .prefer(TLSConfiguration.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(host: url.host, port: url.port, username: url.user, password: url.password,
                                                         database: url.database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = url.poolSize
        // The pool's own chatter (a lease before `run()` got going) stays out of the server's log; failures reach the
        // caller as errors.
        var background = logger
        background.logLevel = .error
        client = PostgresClient(configuration: configuration, backgroundLogger: background)
        runner = Task { [client] in await client.run() }
        // Locks held at once by this process: a lock waiting here holds nothing, and a holder's work uses `client`.
        var lockConfiguration = configuration
        lockConfiguration.options.maximumConnections = Self.lockPoolSize(url.poolSize)
        lockClient = PostgresClient(configuration: lockConfiguration, backgroundLogger: background)
        lockRunner = Task { [lockClient] in await lockClient.run() }
    }

    /// Connections of the lock pool for a query pool of `poolSize`: locks held at once (half the query pool, at least
    /// two), so their work has connections to run on.
    static func lockPoolSize(_ poolSize: Int) -> Int { max(2, poolSize / 2) }

    func close() async {
        runner.cancel()
        lockRunner.cancel()
        _ = await runner.value
        _ = await lockRunner.value
    }

    var writeCounts: (writes: Int, commits: Int) { counts.withLock { ($0.writes, $0.commits) } }

    // MARK: Queries

    /// How long one statement or transaction (its wait for a connection included) may take before the request gets
    /// 503 `database_unavailable` and lets go of what it holds (``Deadline``).
    static let operationLimit: Duration = .seconds(30)
    /// How long taking an advisory lock may wait: another instance's clock move can hold a study for a while.
    static let lockLimit: Duration = .seconds(120)
    /// How long a request may wait for a connection of the lock pool. postgres-nio's pool opens a connection for a
    /// waiting lease only when a *new* lease comes, not when a leased connection closes: when PostgreSQL was killed
    /// under load every lock connection closed while leased, and the leases queued behind them waited for ever, since
    /// every request that could have asked for a new one was queued behind them for the study's lock (scripts/phones'
    /// outage round). Past this wait the request gets 503 and lets go of its place; the next one's lease opens a
    /// connection.
    static let lockLeaseLimit: Duration = .seconds(10)

    /// `operation` within `limit` (``Deadline``); past it, 503 `database_unavailable` naming `what`. With `closed` (the
    /// connection the operation runs on: a lock connection's `isClosed`, or a pooled lease's), the wait also ends within
    /// a second of that connection closing, with a 503 too.
    private func bounded<T: Sendable>(_ what: String, _ limit: Duration = operationLimit, closed: (@Sendable () -> Bool)? = nil,
                                      _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let lost = closed.map { closed in { @Sendable () -> (any Error)? in closed() ? PostgresStoreError.connectionLost(during: what) : nil } }
        return try await Deadline.run(limit, timeout: { PostgresStoreError.timedOut(what, after: limit) }, lost: lost, operation)
    }

    /// Runs `body` on a connection leased from the query pool, within ``operationLimit``. A statement written to a
    /// connection that PostgreSQL then dropped may never be answered (issue 51: one request in three waited the whole
    /// 30 s of a 3.4 s outage): the wait ends within ``Deadline/lostCheckInterval`` of the connection closing, with
    /// 503 `database_unavailable` and `Retry-After: 1`, and the retry finds the database back.
    private func pooled<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let lease = LeasedConnection()
        return try await bounded(what, closed: { lease.isClosed }) { [client] in
            try await client.withConnection { connection in
                lease.leased(connection)
                return try await body(connection)
            }
        }
    }

    /// Runs one statement (autocommit) and returns its rows.
    @discardableResult
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        do {
            return try await pooled("a statement") { [logger] connection in try await connection.query(query, logger: logger).collect() }
        } catch {
            throw PostgresStoreError.refusal(error)
        }
    }

    /// Runs a prepared statement (autocommit) and returns its decoded rows.
    func prepared<S: PostgresPreparedStatement & Sendable>(_ statement: S) async throws -> [S.Row] where S.Row: Sendable {
        do {
            return try await pooled("a statement") { [logger] connection in
                var rows: [S.Row] = []
                for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
                return rows
            }
        } catch {
            throw PostgresStoreError.refusal(error)
        }
    }

    /// Runs `body` in one transaction: committed before this returns, rolled back if it throws.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let value: T
        do {
            value = try await pooled("a transaction") { [logger] connection in
                try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
            }
        } catch let error as PostgresTransactionError {
            // The closure's own error (an APIError) is what the caller should see.
            throw PostgresStoreError.refusal(error.closureError ?? error.commitError ?? error.beginError ?? error)
        }
        committed()
        return value
    }

    /// One statement as its own committed transaction.
    @discardableResult
    func write(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let result = try await rows(query)
        committed()
        return result
    }

    /// One prepared statement as its own committed transaction.
    func write<S: PostgresPreparedStatement & Sendable>(_ statement: S) async throws -> [S.Row] where S.Row: Sendable {
        let result = try await prepared(statement)
        committed()
        return result
    }

    private func committed() {
        counts.withLock {
            $0.writes += 1
            $0.commits += 1
        }
        writeCounter?.increment()
    }

    // MARK: Migrations

    private func migrate() async throws {
        try await client.withConnection { connection in
            // One instance migrates at a time; the others wait here and then find nothing to do.
            try await connection.query("SELECT pg_advisory_lock(hashtextextended('survey-trio-migrations', 0))", logger: logger)
            do {
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS trio_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """, logger: logger)
                let applied = PostgresSchema.applied(try await connection.query("SELECT name FROM trio_migrations", logger: logger).collect()
                    .map { try $0.decode(String.self) })
                // Every pending migration in one transaction (PostgreSQL's DDL is transactional): a database has all of
                // them or none, so a recorded `v1` alone can only be an earlier release's (``PostgresSchema/formerNames``).
                let pending = PostgresSchema.migrations.filter { !applied.contains($0.name) }
                if !pending.isEmpty {
                    try await connection.withTransaction(logger: logger) { tx in
                        for (name, statements) in pending {
                            for statement in statements { try await tx.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                            try await tx.query("INSERT INTO trio_migrations (name) VALUES (\(name))", logger: logger)
                        }
                    }
                    logger.info("database migrated", metadata: ["migrations": "\(pending.map(\.name).joined(separator: ", "))"])
                }
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(hashtextextended('survey-trio-migrations', 0))", logger: logger)
                throw error
            }
            try await connection.query("SELECT pg_advisory_unlock(hashtextextended('survey-trio-migrations', 0))", logger: logger)
        }
    }

    // MARK: Study locks

    func withStudyLock<T: Sendable>(_ studyID: String, wait: Bool, _ body: @Sendable () async throws -> T) async throws -> T? {
        // Within this process work queues for the study (a tick waits behind a registration's planning); `wait` only
        // decides whether to wait for another instance.
        try await locks.withLock(studyID) { try await self.withAdvisoryLock(studyID, wait: wait, body) }
    }

    /// How long the real-time ticker (`wait: false`) waits for another instance's hold: registrations hold a study's
    /// lock shared for milliseconds, a clock move holds it exclusively for seconds.
    static let tickerLockTimeout = "1s"

    /// Holds the study's session advisory lock on one pooled connection while `body` runs (its queries use others).
    /// PostgreSQL queues a waiting exclusive request ahead of later shared ones, so registrations cannot starve it.
    private func withAdvisoryLock<T: Sendable>(_ studyID: String, wait: Bool, _ body: @Sendable () async throws -> T) async throws -> T? {
        try await holdingAdvisoryLocks(lock: "SELECT pg_advisory_lock(hashtextextended(\(studyID), 1))",
                                       unlock: "SELECT pg_advisory_unlock(hashtextextended(\(studyID), 1))",
                                       timeout: wait ? nil : Self.tickerLockTimeout, body)
    }

    func withParticipantLock<T: Sendable>(studyID: String, patientID: String, _ body: @Sendable () async throws -> T) async throws -> T {
        try await locks.withParticipantLock(studyID: studyID, patientID: patientID) {
            // The study's lock shared, then the participant's (always in that order, so two holders cannot wait
            // for each other), in one round trip each way.
            try await self.holdingAdvisoryLocks(lock: """
                SELECT pg_advisory_lock_shared(hashtextextended(\(studyID), 1)), pg_advisory_lock(hashtextextended(\(patientID), 2))
                """, unlock: """
                SELECT pg_advisory_unlock(hashtextextended(\(patientID), 2)), pg_advisory_unlock_shared(hashtextextended(\(studyID), 1))
                """, timeout: nil, body)!
        }
    }

    /// Runs `lock` on one connection of the lock pool, `body` (whose queries use the query pool), then `unlock`,
    /// whatever `body` does. With a `timeout`, a lock not granted within it returns nil (SQLSTATE 55P03,
    /// `lock_not_available`); the timeout is reset whatever the lock query did, so no pooled connection keeps it.
    ///
    /// A lock never outlives its request (issue 51). postgres-nio does not cancel a query whose task is cancelled: a
    /// lock request abandoned while it waited (the client left, the request's deadline passed) stayed queued on its
    /// session, the connection went back to the pool, and PostgreSQL later granted the lock to that idle session, with
    /// nobody to release it: the study could not be walked again until the instance restarted. So whenever a lock
    /// request or its release does not end in PostgreSQL's own answer, the session is ended instead of being returned
    /// (``discard(_:)``): PostgreSQL drops every lock a session holds or waits for when it ends. The release itself runs
    /// shielded from the request's cancellation (work that must finish once started).
    private func holdingAdvisoryLocks<T: Sendable>(lock: PostgresQuery, unlock: PostgresQuery, timeout: String?,
                                                   _ body: @Sendable () async throws -> T) async throws -> T? {
        try await withLeaseLimit(body) { [logger] body, leased in
            try await self.lockClient.withConnection { connection -> T? in
            leased.set()
            if let timeout { try await connection.query("SELECT set_config('lock_timeout', \(timeout), false)", logger: logger) }
            do {
                // A statement's error arrives with its rows: collect them. Bounded: a lock connection that died while
                // waiting must not hold this process's in-process lock for ever.
                // Ended at once when the lock connection closes: PostgreSQL killed under load lost lock queries in flight,
                // and each held one of the lock pool's connections until the limit (every later lock waited behind them).
                _ = try await self.bounded("an advisory lock", Self.lockLimit, closed: { connection.isClosed }) { [logger] in
                    try await connection.query(lock, logger: logger).collect()
                }
            } catch {
                let state = (error as? PSQLError)?.serverInfo?[.sqlState]
                if state == nil {
                    // Cancelled, timed out or lost: the request may still be queued on the session and be granted later.
                    await Self.discard(connection, logger: logger)
                } else if timeout != nil {
                    _ = try? await connection.query("RESET lock_timeout", logger: logger)
                }
                if state == "55P03", timeout != nil { return nil }
                throw PostgresStoreError.refusal(error)
            }
            if timeout != nil { try await connection.query("RESET lock_timeout", logger: logger) }
            // The unlock is bounded too, and runs whatever happens to the request's task; a session whose unlock did not
            // answer is ended (a connection that died took its session's locks with it).
            let release = { @Sendable [logger] () async throws -> Void in
                let done = Task { try await self.bounded("an unlock", closed: { connection.isClosed }) { _ = try await connection.query(unlock, logger: logger).collect() } }
                do { try await done.value } catch {
                    await Self.discard(connection, logger: logger)
                    throw error
                }
            }
            do {
                let value = try await body()
                do { try await release() } catch {
                    // A connection that died took its session's locks with it: the work is done and nothing is held
                    // (this unlock answered 500 after a finished /set_fcm_token in scripts/phones' outage round).
                    guard connection.isClosed else { throw PostgresStoreError.refusal(error) }
                }
                return value
            } catch {
                _ = try? await release()
                throw error
            }
            }
        }
    }

    /// Ends a lock connection's session rather than returning it to the pool with a lock request of unknown fate: the
    /// pool opens a new connection in its place, and PostgreSQL releases whatever the session held or waited for.
    private static func discard(_ connection: PostgresConnection, logger: Logger) async {
        guard !connection.isClosed else { return }
        logger.info("lock connection discarded: a lock request or release did not finish")
        try? await connection.close()
    }

    /// What a child of ``withLeaseLimit(_:_:)`` ended with: the work's value, or the watch saw the lease in time.
    private enum LeaseOutcome<T: Sendable>: Sendable { case value(T?), watched }

    /// Set once a lock connection was leased.
    private final class LeaseFlag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    /// Runs `work` (which leases a lock connection, then sets the flag, then runs `body`) in a child task, and refuses
    /// with 503 when no connection was leased within ``lockLeaseLimit``: the lease alone is bounded (the lock and the
    /// body have their own limits, and a clock move may hold a study long).
    private func withLeaseLimit<T: Sendable>(_ body: @Sendable () async throws -> T,
                                             _ work: @escaping @Sendable (@Sendable () async throws -> T, LeaseFlag) async throws -> T?) async throws -> T? {
        let leased = LeaseFlag()
        // The group awaits its children, so `body` does not outlive this call.
        return try await withoutActuallyEscaping(body) { body in
            try await withThrowingTaskGroup(of: LeaseOutcome<T>.self) { group in
                group.addTask { .value(try await work(body, leased)) }
                group.addTask {
                    try await Task.sleep(for: Self.lockLeaseLimit)
                    guard leased.isSet else { throw PostgresStoreError.timedOut("a lock connection", after: Self.lockLeaseLimit) }
                    return .watched
                }
                while let outcome = try await group.next() {
                    if case .value(let value) = outcome {
                        group.cancelAll()
                        return value
                    }
                }
                return nil
            }
        }
    }
}

/// Errors of the PostgreSQL store, with what to do about them.
enum PostgresStoreError {
    /// A connection or login failure, named for a person (postgres-nio's own text names no host).
    static func describe(_ error: any Error, url: PostgresURL) -> any Error {
        if let psql = error as? PSQLError {
            if let message = psql.serverInfo?[.message] {
                return APIError(.internalServerError, code: "database_unavailable",
                                "PostgreSQL at \(url) refused: \(message) (SQLSTATE \(psql.serverInfo?[.sqlState] ?? "?"))")
            }
            return APIError(.internalServerError, code: "database_unavailable",
                            "cannot reach PostgreSQL at \(url): \(psql.code) \(psql.underlying.map { "\($0)" } ?? "")")
        }
        return error
    }

    /// What a client may be told about a refused statement: a text value PostgreSQL cannot store (a NUL character,
    /// SQLSTATE 22021 or 22P05) is the request's fault, a 400; anything else stays as it is (a 500).
    static func refusal(_ error: any Error) -> any Error {
        if let psql = error as? PSQLError {
            // The database went away under the statement (killed, restarted, network): a 503 the client may retry,
            // not a 500. SQLSTATE class 57 (operator intervention: 57P01 admin shutdown, 57P03 cannot connect now) too.
            // So is any error the server did not send (no SQLSTATE): postgres-nio's own view of a connection that broke
            // under the statement (one answered 500 in scripts/phones' outage round).
            let lost: [PSQLError.Code] = [.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown]
            if lost.contains(psql.code) || psql.serverInfo == nil || psql.serverInfo?[.sqlState]?.hasPrefix("57") == true {
                return APIError(.serviceUnavailable, code: "database_unavailable",
                                "the connection to PostgreSQL was lost during the request; retry it", headers: [.retryAfter: "1"])
            }
        }
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState], state == "22021" || state == "22P05" else { return error }
        return APIError(.badRequest, code: "invalid_character", "a text value contains a NUL character, which the database cannot store")
    }

    /// PostgreSQL's unique-violation state.
    static func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == "23505"
    }
}

/// The pooled connection an operation was leased, once it has one (``PostgresStore``'s `pooled`): what its deadline
/// watches for a close while it waits for an answer.
final class LeasedConnection: Sendable {
    private let connection = Mutex<PostgresConnection?>(nil)

    func leased(_ connection: PostgresConnection) {
        self.connection.withLock { $0 = connection }
    }

    /// True once the leased connection has closed; false before a lease (waiting for one is bounded by the deadline).
    var isClosed: Bool { connection.withLock { $0?.isClosed ?? false } }
}
