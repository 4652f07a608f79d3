import Foundation
import GRDB
import Synchronization
import Testing
@testable import MockServer

/// The lookups every mobile request makes (`SQLiteStore.readNow`) run batched: those that arrive while one batch runs go
/// into the next, in one read transaction on the store's own queue. Each caller still gets its own answer, one failing
/// lookup fails alone, and a lookup sees every write that returned before it was asked.
@Suite struct SQLiteLookupBatchTests {
    private func fileStore() throws -> (SQLiteStore, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookups-\(UUID().uuidString)")
        let store = try SQLiteStore(.file(directory.appendingPathComponent("server.sqlite").path))
        return (store, directory)
    }

    struct Missing: Error, Equatable { let key: Int }

    @Test func concurrentLookupsEachGetTheirOwnAnswerAndAFailureStaysItsOwn() async throws {
        let (store, directory) = try fileStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await store.write { db in
            try db.execute(sql: "CREATE TABLE lookup_probe (key INTEGER PRIMARY KEY, value TEXT NOT NULL)")
            for key in 0..<300 where key % 7 != 0 {
                try db.execute(sql: "INSERT INTO lookup_probe (key, value) VALUES (?, ?)", arguments: [key, "value-\(key)"])
            }
        }
        let answers = await withTaskGroup(of: (Int, Result<String, Missing>).self) { group in
            for key in 0..<300 {
                group.addTask {
                    do {
                        let value = try await store.readNow { db -> String in
                            guard let value = try String.fetchOne(db, sql: "SELECT value FROM lookup_probe WHERE key = ?", arguments: [key])
                            else { throw Missing(key: key) }
                            return value
                        }
                        return (key, .success(value))
                    } catch {
                        return (key, .failure(error as? Missing ?? Missing(key: -1)))
                    }
                }
            }
            var answers: [Int: Result<String, Missing>] = [:]
            for await (key, answer) in group { answers[key] = answer }
            return answers
        }
        #expect(answers.count == 300)
        for key in 0..<300 {
            if key % 7 == 0 {
                #expect(answers[key] == .failure(Missing(key: key)))
            } else {
                #expect(answers[key] == .success("value-\(key)"))
            }
        }
    }

    @Test func lookupsThatArriveWhileABatchRunsShareTheNextOne() async throws {
        let (store, directory) = try fileStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let started = Mutex(false)
        // A first lookup holds the batcher's queue until the 100 others are waiting (the test's own polling, on that
        // queue, not a shared thread; at most 60 s).
        let slow = Task {
            try await store.readNow { db -> Int in
                started.withLock { $0 = true }
                let give = Date().addingTimeInterval(60)
                while store.lookupsWaiting < 100, Date() < give { Thread.sleep(forTimeInterval: 0.001) }
                return try Int.fetchOne(db, sql: "SELECT 1") ?? 0
            }
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
        let before = store.lookupCounts
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<100 {
                group.addTask { try await store.readNow { db in try Int.fetchOne(db, sql: "SELECT ?", arguments: [n]) ?? -1 } }
            }
            return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(try await slow.value == 1)
        #expect(answers == Set(0..<100))
        let after = store.lookupCounts
        #expect(after.lookups - before.lookups == 100)
        // One by one they would take 100 transactions; queued behind the slow one they share one.
        #expect(after.batches - before.batches == 1, "100 lookups took \(after.batches - before.batches) read transactions")
    }

    @Test func aLookupSeesEveryWriteThatReturnedBeforeIt() async throws {
        let (store, directory) = try fileStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await store.write { db in try db.execute(sql: "CREATE TABLE counter_probe (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)") }
        try await store.write { db in try db.execute(sql: "INSERT INTO counter_probe (id, n) VALUES (1, 0)") }
        // Writers and readers interleaved: each task writes its own row, then must read it back at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 2..<42 {
                group.addTask {
                    for n in 1...5 {
                        try await store.write { db in
                            try db.execute(sql: "INSERT OR REPLACE INTO counter_probe (id, n) VALUES (?, ?)", arguments: [worker, n])
                        }
                        let seen = try await store.readNow { db in
                            try Int.fetchOne(db, sql: "SELECT n FROM counter_probe WHERE id = ?", arguments: [worker])
                        }
                        #expect(seen == n, "worker \(worker) wrote \(n) and read \(String(describing: seen))")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test func anInMemoryStoreBatchesItsLookupsToo() async throws {
        let store = try SQLiteStore(.memory)
        try await store.write { db in try db.execute(sql: "CREATE TABLE memory_probe (key INTEGER PRIMARY KEY)") }
        try await store.write { db in try db.execute(sql: "INSERT INTO memory_probe (key) VALUES (1), (2), (3)") }
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await store.readNow { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM memory_probe") ?? 0 } }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(counts == Array(repeating: 3, count: 50))
    }
}
