import Foundation
import GRDB
import Testing
@testable import MockServer

/// A file-backed SQLite store syncs its write-ahead log at every commit (`synchronous = FULL`), so a write that has
/// returned survives the machine going down, not only the process. GRDB opens pools with NORMAL, which syncs only at
/// checkpoints; the store sets FULL after opening.
@Suite struct SQLiteDurabilityTests {
    @Test func aFileStoreCommitsWithSynchronousFull() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(.file(directory.appendingPathComponent("server.sqlite").path))
        let mode = try await store.writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(mode == 2, "PRAGMA synchronous on the writer (0 OFF, 1 NORMAL, 2 FULL)")
        let journal = try await store.writer.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
    }
}
