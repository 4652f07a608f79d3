import Foundation
import Testing
import Glibc
@testable import ClientSDK
import SurveyWire

@Suite struct EventLogTests {
    @Test func appendSealAndSkipATornLine() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-log-\(UUID().uuidString.prefix(8))")
        let log = try EventLog(directory: dir)
        for n in 0..<3 { try log.append(.init(timestampMillis: Int64(n), category: "c", name: "e\(n)", extra: nil)) }
        // A crash mid-append leaves a torn last line.
        let handle = try FileHandle(forWritingTo: log.openURL)
        handle.seekToEndOfFile()
        handle.write(Data("{\"timestampMillis\": 9, \"categ".utf8))
        try handle.close()
        #expect(log.openCount == 3)
        let sealed = try #require(try log.seal(seq: 4))
        #expect(sealed.lastPathComponent == "events.4.jsonl")
        #expect(EventLog.events(in: sealed).events.map(\.name) == ["e0", "e1", "e2"])
        #expect(EventLog.events(in: sealed).skipped == 1)
        // Sealing again for the same seq (after a crash) finds the same batch; new events go to a fresh log.
        try log.append(.init(timestampMillis: 10, category: "c", name: "later", extra: nil))
        #expect(try log.seal(seq: 4) == sealed)
        #expect(log.openCount == 1)
        log.dropSealed(before: 5)
        #expect(!FileManager.default.fileExists(atPath: sealed.path))
        #expect(log.openCount == 1)
    }
}

extension EventLogTests {
    static func randomText(_ rng: inout SeededRandom) -> String {
        let pieces: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{08}", "\u{0C}", "\u{01}", "\u{1F}",
                                "\u{7F}", "é", "ß", "中", "😀", "e\u{301}", "{", "}", ",", ":"]
        return String((0..<Int.random(in: 0...12, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined())
    }

    @Test func aLineIsWhatJSONValueWritesAndDecodesBackToTheEvent() throws {
        var rng = SeededRandom(seed: 18)
        for _ in 0..<2_000 {
            let extra: [String: String]? = Bool.random(using: &rng) ? nil
                : Dictionary((0..<Int.random(in: 0...4, using: &rng)).map { _ in (Self.randomText(&rng), Self.randomText(&rng)) }) { a, _ in a }
            let event = ClientState.PendingEvent(timestampMillis: Int64.random(in: -1...Int64(1) << 52, using: &rng),
                                                 category: Self.randomText(&rng), name: Self.randomText(&rng), extra: extra)
            let line = EventLog.line(event)
            #expect(line.last == 10)
            var object: [String: JSONValue] = ["category": .string(event.category), "name": .string(event.name),
                                               "timestampMillis": .number(Double(event.timestampMillis))]
            if let extra { object["extra"] = .object(extra.mapValues { .string($0) }) }
            let text = String(decoding: line.dropLast(), as: UTF8.self)
            #expect(text == JSONValue.object(object).compactText)
            let back = try WireJSON.decode(ClientState.PendingEvent.self, from: Data(line.dropLast()))
            #expect(back.timestampMillis == event.timestampMillis)
            #expect(back.category == event.category)
            #expect(back.name == event.name)
            #expect(back.extra == event.extra)
        }
    }

    @Test func aBatchIsDueOnceUntilSealedAndNothingIsWrittenWhileNotRecording() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-log-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = try EventLog(directory: dir)
        func add(_ n: Int) throws -> EventLog.Appended { try log.append(.init(timestampMillis: Int64(n), category: "c", name: "e", extra: nil), batchSize: 3) }
        #expect(try add(0) == .written(waiting: 1, batchDue: false))
        #expect(try add(1) == .written(waiting: 2, batchDue: false))
        #expect(try add(2) == .written(waiting: 3, batchDue: true))
        #expect(try add(3) == .written(waiting: 4, batchDue: false))
        _ = try log.seal(seq: 0)
        #expect(try add(4) == .written(waiting: 1, batchDue: false))
        log.setRecording(false)
        #expect(try add(5) == .dropped)
        #expect(log.openCount == 1)
        log.setRecording(true)
        log.close()
        #expect(try add(6) == .dropped)
        #expect(EventLog.events(in: log.openURL).events.count == 1)
    }

    @Test func eventsRecordedFromManyThreadsWhileBatchesAreSealedAreEachKeptOnce() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-log-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = try EventLog(directory: dir)
        let writers = 4, each = 500
        // Each batch is read right after it is sealed and then deleted, as a ping is made from it: an event written
        // into a batch after that would be lost, and missing below.
        let batches = await withTaskGroup(of: [Int64].self) { group in
            for w in 0..<writers {
                group.addTask {
                    for n in 0..<each { _ = try? log.append(.init(timestampMillis: Int64(w * each + n), category: "c", name: "e", extra: nil)) }
                    return []
                }
            }
            group.addTask {
                var made: [Int64] = []
                for seq in 0..<50 {
                    if let sealed = try? log.seal(seq: seq) {
                        made += EventLog.events(in: sealed).events.map(\.timestampMillis)
                        log.dropSealed(before: seq + 1)
                    }
                    await Task.yield()
                }
                return made
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        let seen = batches + EventLog.events(in: log.openURL).events.map(\.timestampMillis)
        #expect(seen.count == writers * each)
        #expect(Set(seen).count == writers * each)
        #expect(log.openCount == EventLog.events(in: log.openURL).events.count)
    }
}
