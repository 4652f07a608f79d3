import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import ClientSDK
import SurveyWire

@Suite struct AnswerRowTests {
    @Test func rowsFollowTheSpecAndSkipInfoBoxes() {
        let entry = SurveyEntry(id: "s", name: "S", surveyType: "tracking_survey", content: [
            ["question_id": "i", "question_type": "info_text_box", "question_text": "Hi"],
            ["question_id": "r", "question_type": "radio_button", "question_text": "Pick", "answers": [["text": "A"], ["text": "B"]]],
            ["question_id": "s", "question_type": "slider", "prompt": "How much", "min": "0", "max": "10"],
            ["question_id": "f", "question_type": "free_response", "question_text": "Say"],
        ], settings: [:])
        let rows = SurveyClient.answerRows(for: entry, answers: ["r": "B", "s": "4"])
        #expect(rows.map(\.questionID) == ["r", "s", "f"])
        #expect(rows[0].answerOptions == "[A; B]")
        #expect(rows[1].questionText == "How much")
        #expect(rows[1].answerOptions == "0 - 10")
        #expect(rows[2].answer == "")
    }
}

@Suite struct PingBuilderTests {
    @Test func eventsAreRelativeToTheFirstEventAndIdsFollowTheSeq() {
        let config = SurveyClientConfiguration(serverURL: "http://s", relayURL: "http://r", storageDirectory: URL(fileURLWithPath: "/tmp"),
                                               patientID: "p", temporaryPassword: "x", platform: .ios)
        let t0 = WireTime.epochMillis(WireTime.parse("2026-05-04T14:00:00.500Z")!)
        let events: [ClientState.PendingEvent] = [.init(timestampMillis: t0, category: "survey", name: "received", extra: nil),
                                                  .init(timestampMillis: t0 + 1500, category: "survey", name: "submitted", extra: ["k": "v"])]
        let ping = PingBuilder.ping(events: events, seq: 7, clientID: "c", configuration: config, now: WireTime.parse("2026-05-04T14:00:02Z")!,
                                    reason: "flush", firstRunDate: "2026-05-04+00:00")
        #expect(ping.pingInfo.seq == 7)
        // What Glean's pipeline requires besides (PROTOCOL.md §8).
        #expect(ping.clientInfo.firstRunDate == "2026-05-04+00:00" && ping.clientInfo.architecture == HostOS.architecture)
        #expect(!HostOS.architecture.isEmpty && HostOS.architecture != "unknown")
        #expect(throws: Never.self) { try ping.checkRanges() }
        #expect(ping.pingInfo.startTime == "2026-05-04T14:00:00.500Z")
        #expect(ping.events.map(\.timestamp) == [0, 1500])
        #expect(ping.clientInfo.os == "iOS")
        let id = PingBuilder.documentID(clientID: "c", pingName: "events", seq: 7)
        #expect(id == PingBuilder.documentID(clientID: "c", pingName: "events", seq: 7))
        #expect(id != PingBuilder.documentID(clientID: "c", pingName: "events", seq: 8))
        #expect(UUID(uuidString: id) != nil)
    }

    /// `first_run_date` as Glean writes it: the local day and the zone's offset on it.
    @Test func firstRunDateIsTheLocalDayWithItsOffset() {
        let instant = WireTime.parse("2026-05-04T03:30:00Z")!
        #expect(PingBuilder.gleanDate(instant, timeZone: TimeZone(identifier: "America/Chicago")!) == "2026-05-03-05:00")
        #expect(PingBuilder.gleanDate(instant, timeZone: TimeZone(identifier: "Asia/Kolkata")!) == "2026-05-04+05:30")
        #expect(PingBuilder.gleanDate(instant, timeZone: TimeZone(identifier: "UTC")!) == "2026-05-04+00:00")
    }
}

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

@Suite struct SurveyClientStorageTests {
    func configuration(_ root: URL) -> SurveyClientConfiguration {
        SurveyClientConfiguration(serverURL: "http://127.0.0.1:1", relayURL: "http://127.0.0.1:1", storageDirectory: root,
                                  patientID: "p1", temporaryPassword: "pw")
    }

    @Test func aSecondClientOnTheSameDirectoryRefusesUntilTheFirstCloses() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-lock-\(UUID().uuidString.prefix(8))")
        let first = try SurveyClient(configuration: configuration(root))
        do {
            _ = try SurveyClient(configuration: configuration(root))
            Issue.record("a second client started on a locked directory")
        } catch {
            #expect(error.code == "storage_locked")
        }
        await first.close()
        let second = try SurveyClient(configuration: configuration(root))
        await second.close()
    }

    @Test func aCorruptStateFileIsQuarantinedAndTheClientStartsFresh() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-corrupt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("{\"registered\": tru".utf8).write(to: root.appendingPathComponent("state.json"))
        let client = try SurveyClient(configuration: configuration(root))
        #expect(await client.pendingSurveys().isEmpty)
        let quarantine = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("quarantine").path)
        #expect(quarantine.contains { $0.hasPrefix("state.json.") && !$0.hasSuffix(".reason") })
        await client.close()
    }
}

@Suite struct TelemetryPolicyTests {
    @Test func rateLimiterOpensAWindowAtTheFirstUploadAndWaitsForItsEnd() {
        var limiter = PingRateLimiter(limit: 3, interval: .seconds(60))
        let t0 = ContinuousClock.now
        #expect(limiter.take(at: t0) == nil)
        #expect(limiter.take(at: t0 + .seconds(1)) == nil)
        #expect(limiter.take(at: t0 + .seconds(2)) == nil)
        // The fourth waits for the rest of the window, to the millisecond (Glean's iOS loop rounds 999 ms to 0: B21).
        #expect(limiter.take(at: t0 + .milliseconds(59_001)) == .milliseconds(999))
        #expect(limiter.take(at: t0 + .seconds(60)) == .zero)
        // A new window opens once the interval has passed.
        #expect(limiter.take(at: t0 + .milliseconds(60_001)) == nil)
        #expect(limiter.take(at: t0 + .seconds(61)) == nil)
        #expect(limiter.take(at: t0 + .seconds(62)) == nil)
        #expect(limiter.take(at: t0 + .seconds(63)) != nil)
    }

    @Test func quotasKeepTheNewestAndTheMaximumAgeDropsOldPings() {
        let day: Int64 = 86_400_000
        let now: Int64 = 100 * day
        var config = TelemetryConfiguration(maxPendingPings: 3, maxPendingBytes: 1000, maxPingAge: .seconds(30 * 86_400))
        let pings = (0..<5).map { PingQuota.Entry(id: "p\($0)", bytes: 100, createdMillis: now - Int64(5 - $0) * 1000) }
        let byCount = PingQuota.overflow(pings, nowMillis: now, configuration: config)
        #expect(byCount.map(\.id) == ["p1", "p0"])
        #expect(byCount.allSatisfy { $0.reason == "count_quota" })
        config.maxPendingPings = 500
        config.maxPendingBytes = 250
        let bySize = PingQuota.overflow(pings, nowMillis: now, configuration: config)
        #expect(bySize.map(\.id) == ["p2", "p1", "p0"])
        #expect(bySize.allSatisfy { $0.reason == "size_quota" })
        config.maxPendingBytes = 1 << 20
        let aged = pings + [PingQuota.Entry(id: "old", bytes: 1, createdMillis: now - 31 * day)]
        #expect(PingQuota.overflow(aged, nowMillis: now, configuration: config).map { "\($0.id):\($0.reason)" } == ["old:max_age"])
        #expect(PingQuota.overflow(pings, nowMillis: now, configuration: config).isEmpty)
    }

    @Test func extraValuesAreTruncatedAt500BytesOnACharacterBoundary() {
        #expect(SurveyClient.truncated("short") == "short")
        let long = String(repeating: "a", count: 499) + "é" + "tail"
        let cut = SurveyClient.truncated(long)
        #expect(cut.utf8.count == 499)
        #expect(cut == String(repeating: "a", count: 499))
        #expect(SurveyClient.truncated(String(repeating: "b", count: 800)).utf8.count == 500)
    }

    @Test func appIDsAreSanitizedAsGleanDoes() {
        #expect(SurveyClient.sanitizedAppID("org.mozilla.Glean_Test App") == "org-mozilla-glean-test-app")
        #expect(SurveyClient.sanitizedAppID("survey-sdk") == "survey-sdk")
        #expect(SurveyClient.sanitizedAppID("a..b") == "a-b")
    }
}

/// The events buffer is bounded: a consumer that reads nothing while 40 events happen finds only the newest.
@Suite struct EventBufferTests {
    @Test func anUnreadEventsStreamKeepsOnlyTheNewestUpToItsLimit() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-events-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        // Nothing listens on port 1: every fetch fails at once, and each push still reports `pushReceived`.
        var config = SurveyClientConfiguration(serverURL: "http://127.0.0.1:1", relayURL: nil, storageDirectory: root,
                                               patientID: "p1", temporaryPassword: "pw", heartbeatInterval: nil, pushSource: .external)
        config.eventBufferLimit = 5
        let client = try SurveyClient(configuration: config)
        for index in 0..<20 {
            let push = SurveyPush(surveyIDs: ["s\(index)"], sentTime: "2026-05-04T14:00:00Z", nonce: "n\(index)", surveyUUIDs: ["s\(index)": ["u\(index)"]])
            _ = try? await client.receive(push: push.dataFields())
        }
        await client.close()
        var seen: [SurveyClientEvent] = []
        for await event in client.events { seen.append(event) }
        #expect(seen.count == 5, "\(seen)")
        // The newest survive: the last push's report is among them, the first push's is not.
        #expect(seen.contains(.pushReceived(messageID: "external-n19", surveyIDs: ["s19"])))
        #expect(!seen.contains(.pushReceived(messageID: "external-n0", surveyIDs: ["s0"])))
    }
}
