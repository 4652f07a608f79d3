import Foundation
import Testing
import Glibc
@testable import ClientSDK
import SurveyWire

@Suite struct ClientStoreTests {
    @Test func writesAreWholeFilesAndIdsAreMadeSafe() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-store-\(UUID().uuidString.prefix(8))")
        let store = try ClientStore(root: dir)
        try store.write(["a": 1], to: store.stateURL)
        #expect(store.read([String: Int].self, from: store.stateURL) == ["a": 1])
        #expect(store.surveyURL("../../etc/passwd").lastPathComponent == ".._.._etc_passwd.json")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("tmp") }
        #expect(leftovers.isEmpty)
    }

    func directory() -> URL { FileManager.default.temporaryDirectory.appendingPathComponent("sdk-store-\(UUID().uuidString.prefix(8))") }

    @Test func corruptFilesAreQuarantinedWithAReasonAndDoNotBlockTheRest() throws {
        let store = try ClientStore(root: directory())
        try Data("{not json".utf8).write(to: store.stateURL)
        #expect(store.read([String: Int].self, from: store.stateURL) == nil)
        #expect(!FileManager.default.fileExists(atPath: store.stateURL.path))
        try store.write(["ok": 1], to: store.surveyURL("a"))
        try Data([0xFF, 0x00, 0x7B]).write(to: store.surveyURL("b"))
        try Data().write(to: store.surveyURL("c"))
        try store.write(["ok": 2], to: store.surveyURL("d"))
        #expect(store.list([String: Int].self, in: store.surveysURL).map(\.1) == [["ok": 1], ["ok": 2]])
        let quarantined = store.quarantined()
        #expect(quarantined.count == 3)
        #expect(quarantined.contains { $0.hasPrefix("state.json.") })
        #expect(quarantined.contains { $0.hasPrefix("surveys_b.json.") })
        let reasons = try FileManager.default.contentsOfDirectory(atPath: store.quarantineURL.path).filter { $0.hasSuffix(".reason") }
        #expect(reasons.count == 3)
        let note = try String(contentsOf: store.quarantineURL.appendingPathComponent(reasons.sorted()[0]), encoding: .utf8)
        #expect(note.contains(": "))
    }

    @Test func oneClientPerDirectory() throws {
        let root = directory()
        let first = try ClientStore(root: root)
        #expect(throws: SurveyClientError.self) { try ClientStore(root: root) }
        do {
            _ = try ClientStore(root: root)
        } catch {
            #expect(error.code == "storage_locked")
            #expect(error.message.contains("pid \(getpid())"))
        }
        first.releaseLock()
        let second = try ClientStore(root: root)
        second.releaseLock()
    }

    /// A copy of the lock's descriptor elsewhere (what a child forked by another thread holds until it execs) must not
    /// keep the directory locked once its client has released it.
    @Test func aReleasedLockIsFreeWhileACopyOfItsDescriptorIsOpen() throws {
        let root = directory()
        let first = try ClientStore(root: root)
        let lockPath = root.appendingPathComponent("lock").resolvingSymlinksInPath().path
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap(Int32.init)
        let held = try #require(descriptors.first { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == lockPath })
        let copy = dup(held)
        #expect(copy >= 0)
        defer { close(copy) }
        first.releaseLock()
        let second = try ClientStore(root: root)
        second.releaseLock()
    }

    @Test func durableWriteReplacesWholeFilesAndLeavesNoTemporaries() throws {
        let store = try ClientStore(root: directory())
        for n in 0..<50 { try store.write(["n": n], to: store.stateURL) }
        #expect(store.read([String: Int].self, from: store.stateURL) == ["n": 49])
        let names = try FileManager.default.contentsOfDirectory(atPath: store.root.path)
        #expect(!names.contains { $0.contains(".tmp-") })
        // A write into a directory that is gone fails cleanly, with the path in the message.
        let gone = store.root.appendingPathComponent("nowhere/x.json")
        #expect(throws: SurveyClientError.self) { try store.write(["n": 1], to: gone) }
    }
}
