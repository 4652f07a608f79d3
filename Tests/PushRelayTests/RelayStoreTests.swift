import Foundation
import GRDB
import Testing
@testable import PushRelay
import SurveyWire

/// The relay's `--store` writer: changes queue in order and commit in groups off the caller's thread; `committed()`
/// returns once what came before it is on disk, or throws what the commit threw.
@Suite struct RelayStoreTests {
    private func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("relay-store-\(UUID().uuidString)/relay.sqlite").path
    }

    private func device(_ token: String, messages: Int = 0) -> DeviceState {
        var device = DeviceState(token: token, platform: .android, appID: "a")
        var trace: [TraceEntry] = []
        for index in 0..<messages {
            _ = device.accept(RelayMessage(id: "\(token)-\(index)", payload: ["n": .string("\(index)")], priority: 10, collapseID: nil,
                                           pushType: "background", sentAt: 1000, expiresAt: 10_000_000, phase: .stored),
                              now: 1000, trace: &trace)
        }
        return device
    }

    @Test func concurrentChangesAllCommitAndSurviveAReopen() async throws {
        let path = temporaryPath()
        let store = try RelayStore(path: path)
        // 40 tasks, each saving its device 5 times (its latest state with 1...5 messages) and waiting for the commit.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    for messages in 1...5 {
                        store.save([self.device("t\(index)", messages: messages)])
                        try await store.committed()
                    }
                }
            }
            try await group.waitForAll()
        }
        store.retire("t0", at: 42)
        try await store.committed()
        #expect(store.commits >= 1 && store.commits <= 201)
        let loaded = try RelayStore(path: path).load()
        #expect(loaded.devices.count == 39)
        #expect(loaded.devices["t1"]?.view(now: 1000).pending.count == 5)
        #expect(loaded.retired == ["t0": 42])
        #expect(loaded.unreadable.isEmpty)
    }

    @Test func theLastOfSeveralQueuedStatesWins() async throws {
        let path = temporaryPath()
        let store = try RelayStore(path: path)
        store.save((1...10).map { device("same", messages: $0) })
        store.save([device("other", messages: 1)])
        store.retire("other", at: 7)
        try await store.committed()
        let loaded = try RelayStore(path: path).load()
        #expect(loaded.devices.keys.sorted() == ["same"])
        #expect(loaded.devices["same"]?.view(now: 1000).pending.count == 10)
        #expect(loaded.retired == ["other": 7])
        store.wipe()
        try await store.committed()
        let wiped = try RelayStore(path: path).load()
        #expect(wiped.devices.isEmpty && wiped.retired.isEmpty)
    }

    @Test func aFailedCommitIsReportedToItsWaitersAndLaterChangesCommit() async throws {
        let path = temporaryPath()
        let store = try RelayStore(path: path)
        store.save([device("before")])
        try await store.committed()
        // Another connection takes the table away: the next transaction fails.
        let other = try DatabaseQueue(path: path)
        try await other.write { db in try db.execute(sql: "ALTER TABLE device RENAME TO device_gone") }
        store.save([device("lost")])
        await #expect(throws: (any Error).self) { try await store.committed() }
        try await other.write { db in try db.execute(sql: "ALTER TABLE device_gone RENAME TO device") }
        store.save([device("after")])
        try await store.committed()
        let loaded = try RelayStore(path: path).load()
        #expect(loaded.devices.keys.sorted() == ["after", "before"])
    }
}
