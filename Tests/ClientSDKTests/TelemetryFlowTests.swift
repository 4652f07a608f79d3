import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

/// Glean's pipeline in the SDK against ``MemoryStudy``'s ingestion route, with a device clock the test moves: session
/// pings and their numbers, the rate limit, quotas and the maximum age, failures that keep a ping and refusals that
/// drop it, opting out, the batch that fills up, and MMA's surface. (The integration suite runs the end-to-end ones
/// against the mock server's pipeline.)
@Suite struct TelemetryFlowTests {
    /// A device clock the test moves.
    final class Clock: Sendable {
        private let offset = Mutex<TimeInterval>(0)
        func advance(days: Double) { offset.withLock { $0 += days * 86_400 } }
        var now: @Sendable () -> Date { { [self] in Date().addingTimeInterval(offset.withLock { $0 }) } }
    }

    static func client(_ study: MemoryStudy, directory: URL = InMemoryFlowTests.directory(), clock: Clock = Clock(),
                       _ adjust: (inout SurveyClientConfiguration) -> Void = { _ in }) throws -> SurveyClient {
        try SurveyClient(configuration: MemoryStudy.configuration(directory, relay: false, telemetry: true, adjust), transport: study,
                         now: clock.now)
    }

    static func reasons(_ pings: [MemoryStudy.Ping]) -> [String] { pings.compactMap { $0.body["ping_info"]?["reason"]?.stringValue } }
    static func seqs(_ pings: [MemoryStudy.Ping]) -> [Int] { pings.compactMap { $0.body["ping_info"]?["seq"]?.numberValue.map { Int($0) } } }
    static func eventNames(_ ping: MemoryStudy.Ping) -> [String] { ping.body["events"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [] }

    @Test func sessionsMakeBaselineAndEventsPingsNumberedWithoutGaps() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try Self.client(study)
        try await client.start()
        #expect(await client.isActive)
        client.record(category: "app", name: "opened", extra: ["screen": "home"])
        await client.pause()
        #expect(await !client.isActive)
        try await client.resume()
        client.record(category: "app", name: "tapped")
        await client.close()
        let baseline = study.pings("baseline")
        #expect(Self.reasons(baseline) == ["active", "inactive", "active", "inactive"])
        #expect(Self.seqs(baseline) == [0, 1, 2, 3])
        let duration = baseline[1].body["metrics"]?["timespan"]?["glean.baseline.duration"]
        #expect(duration?["time_unit"]?.stringValue == "second" && duration?["value"]?.numberValue != nil)
        let events = study.pings("events")
        #expect(Self.reasons(events) == ["inactive", "inactive"] && Self.seqs(events) == [0, 1])
        #expect(Self.eventNames(events[0]).contains("opened") && Self.eventNames(events[0]).contains("registered"))
        #expect(Self.eventNames(events[1]) == ["resumeSession", "tapped", "pauseSession"])
        // Every ping carries the same client id and Glean's client_info.
        let clientID = await client.clientID
        #expect(study.pings().allSatisfy { $0.body["client_info"]?["client_id"]?.stringValue == clientID })
        #expect(study.pings().allSatisfy { $0.body["client_info"]?["first_run_date"]?.stringValue != nil })
        // An event's extra is kept as recorded.
        let opened = events[0].body["events"]?.arrayValue?.first { $0["name"]?.stringValue == "opened" }
        #expect(opened?["extra"]?["screen"]?.stringValue == "home" && opened?["category"]?.stringValue == "app")
    }

    @Test func uploadsAreRateLimitedAndTheRestGoWhenTheWindowEnds() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try Self.client(study) {
            $0.telemetry.pingsPerInterval = 3
            // Long enough that a test process starved for a moment does not see the window end mid-loop.
            $0.telemetry.rateInterval = .seconds(3)
        }
        try await client.start()  // the baseline ping takes the first slot
        for n in 0..<4 {
            client.record(category: "test", name: "n\(n)")
            _ = try await client.flushTelemetry()
        }
        #expect(study.pings().count == 3)
        #expect(await client.status().pingsWaiting == 2)
        // The window ends; the rest go without anything else happening.
        #expect(await study.until { study.pings("events").count == 4 })
        #expect(await client.status().pingsWaiting == 0)
        await client.close()
    }

    @Test func quotasAndTheMaximumAgeDeleteTheOldestAndCountThem() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        study.setIngestStatus(503)
        let clock = Clock()
        let client = try Self.client(study, clock: clock) { $0.telemetry.maxPendingPings = 3 }
        try await client.start()  // its baseline ping waits
        for n in 0..<4 {
            client.record(category: "test", name: "n\(n)")
            _ = try? await client.flushTelemetry()
        }
        // Five pings made, the newest three kept.
        var status = await client.status()
        #expect(status.pingsWaiting == 3 && status.pingsDropped == ["count_quota": 2])
        // 31 days later, still unsent: past the 30-day maximum age.
        clock.advance(days: 31)
        _ = try? await client.flushTelemetry()
        status = await client.status()
        #expect(status.pingsWaiting == 0 && status.pingsDropped == ["count_quota": 2, "max_age": 3])
        study.setIngestStatus(nil)
        client.record(category: "test", name: "later")
        _ = try await client.flushTelemetry()
        #expect(study.pings("events").count == 1)
        #expect(study.pings("events").first.map(Self.eventNames)?.first == "later")
        await client.close()
    }

    @Test func aServerErrorKeepsThePingARefusalDropsItAndAMissingRouteKeepsThemAll() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try Self.client(study)
        // 503: kept, and the error is thrown to the caller.
        study.setIngestStatus(503)
        client.record(category: "test", name: "kept")
        await #expect(throws: SurveyClientError.self) { try await client.flushTelemetry() }
        #expect(await client.status().pingsWaiting == 1)
        // 400: the server will never take it; dropped and counted (Glean does the same).
        study.setIngestStatus(400)
        _ = try? await client.flushTelemetry()
        var status = await client.status()
        #expect(status.pingsWaiting == 0 && status.pingsDropped == ["rejected": 1])
        // 404: no ingestion route there; kept, and nothing more is sent this run.
        study.setIngestStatus(404)
        client.record(category: "test", name: "stays")
        _ = try? await client.flushTelemetry()
        let asked = study.seen.filter { $0.path.hasPrefix("/submit/") }.count
        study.setIngestStatus(nil)
        client.record(category: "test", name: "stays too")
        _ = try? await client.flushTelemetry()
        status = await client.status()
        #expect(status.pingsWaiting == 2)
        #expect(study.seen.filter { $0.path.hasPrefix("/submit/") }.count == asked)
        await client.close()
    }

    /// The first 404 of a pass ends it: the pings behind it are not sent to the same missing route (each answered 404
    /// and reported `telemetry_route_missing` again before ``PingUploadMachine``).
    @Test func aMissingRouteEndsThePassAtTheFirstPing() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let directory = InMemoryFlowTests.directory()
        // Pings queued by a run without a telemetry endpoint (nothing failed, so no retry loop runs beside the test).
        let offline = try Self.client(study, directory: directory) { $0.telemetryURL = nil }
        for name in ["one", "two"] {
            offline.record(category: "test", name: name)
            _ = try await offline.flushTelemetry()
        }
        #expect(await offline.status().pingsWaiting == 2)
        await offline.close()
        study.setIngestStatus(404)
        let client = try Self.client(study, directory: directory)
        client.record(category: "test", name: "three")
        _ = try await client.flushTelemetry()
        #expect(study.seen.filter { $0.path.hasPrefix("/submit/") }.count == 1)
        #expect(await client.status().pingsWaiting == 3)
        await client.close()
    }

    @Test func aPingLargerThanTheLimitAfterGzipIsDroppedAndCounted() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try Self.client(study) {
            $0.gzipTelemetry = true
            $0.telemetry.maxPingBodyBytes = 1500
        }
        // 4 kB of JSON that gzip shrinks well under the limit: it goes (the limit applies after gzip).
        var compressible: [String: String] = [:]
        for n in 0..<8 { compressible["k\(n)"] = String(repeating: "x", count: 2000) }
        client.record(category: "test", name: "compressible", extra: compressible)
        let sent = try #require(try await client.flushTelemetry())
        // Random hex does not shrink enough: dropped and counted.
        var random: [String: String] = [:]
        for n in 0..<8 { random["k\(n)"] = (0..<250).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
        client.record(category: "test", name: "random", extra: random)
        _ = try await client.flushTelemetry()
        let status = await client.status()
        #expect(status.pingsDropped == ["too_large": 1] && status.pingsWaiting == 0)
        #expect(study.pings("events").map(\.documentID) == [sent])
        await client.close()
    }

    @Test func optingOutDeletesWhatWaitsAndSendsOneDeletionRequest() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try Self.client(study)
        try await client.start()
        let before = await client.clientID
        client.record(category: "test", name: "private")
        #expect(await client.status().eventsWaiting > 0)
        try await client.setUploadEnabled(false)
        #expect(await client.clientID == SurveyClient.disabledClientID)
        var status = await client.status()
        #expect(!status.uploadEnabled && status.eventsWaiting == 0 && status.pingsWaiting == 0)
        let deletion = study.pings("deletion-request")
        #expect(deletion.map { $0.body["client_info"]?["client_id"]?.stringValue } == [before])
        #expect(Self.reasons(deletion) == ["set_upload_enabled"])
        let sentBefore = study.pings().count
        // Nothing is recorded or sent while opted out, not even the session's pings.
        client.record(category: "test", name: "ignored")
        try await client.track("E_Saved_Bookmark")
        await client.pause()
        status = await client.status()
        #expect(status.eventsWaiting == 0 && status.pingsWaiting == 0)
        #expect(study.pings().count == sentBefore)
        // Opting in again starts a new client id.
        try await client.setUploadEnabled(true)
        let after = await client.clientID
        #expect(after != before && after != SurveyClient.disabledClientID)
        try await client.resume()
        #expect(await study.until { study.pings("baseline").contains { $0.body["client_info"]?["client_id"]?.stringValue == after } })
        await client.close()
    }

    @Test func optingOutWhileTheClientWasNotRunningSendsTheDeletionRequestAtStart() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let directory = InMemoryFlowTests.directory()
        let first = try Self.client(study, directory: directory)
        try await first.start()
        let id = await first.clientID
        await first.close()
        let second = try Self.client(study, directory: directory) { $0.telemetry.uploadEnabled = false }
        try await second.start()
        let deletion = study.pings("deletion-request")
        #expect(deletion.map { $0.body["client_info"]?["client_id"]?.stringValue } == [id])
        #expect(Self.reasons(deletion) == ["at_init"])
        #expect(await second.clientID == SurveyClient.disabledClientID)
        await second.close()
        // The choice is remembered: a third start with the same configuration sends nothing more.
        let third = try Self.client(study, directory: directory) { $0.telemetry.uploadEnabled = false }
        try await third.start()
        await third.close()
        #expect(study.pings("deletion-request").count == 1)
    }

    @Test func aFullBatchMakesAnEventsPingOfItsOwn() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try Self.client(study) { $0.telemetry.maxEvents = 3 }
        for n in 0..<3 { client.record(category: "test", name: "n\(n)") }
        #expect(await study.until { !study.pings("events").isEmpty })
        let ping = try #require(study.pings("events").first)
        #expect(Self.reasons([ping]) == ["max_capacity"])
        #expect(Self.eventNames(ping) == ["n0", "n1", "n2"])
        await client.close()
    }

    @Test func mmaTrackUsesTheSeedDefaultsAndSessionsBeatWhileActive() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let directory = InMemoryFlowTests.directory()
        let client = try Self.client(study, directory: directory) { $0.telemetry.sessionHeartbeat = .milliseconds(100) }
        try await client.start()
        try await client.setUserAttributes(["Focus Installed": "true"])
        try await client.track("E_Saved_Bookmark")
        try await client.track("E_Opened_New_Tab", info: "from menu", value: 2.5, messageID: "5111602214338560")
        // At least two beats while active (polled: the suite shares two cores).
        let before = await client.status().eventsWaiting
        #expect(await MemoryStudy.eventually { await client.status().eventsWaiting >= before + 2 })
        await client.pause()
        try await Task.sleep(for: .milliseconds(300))
        await client.close()
        let events = study.pings("events").flatMap { $0.body["events"]?.arrayValue ?? [] }.filter { $0["category"]?.stringValue == "mma" }
        let names = events.compactMap { $0["name"]?.stringValue }
        #expect(names.first == "start" && names.last == "pauseSession")
        // Beats while active, none after the pause.
        #expect(names.filter { $0 == "heartbeat" }.count >= 2)
        let tracks = events.filter { $0["name"]?.stringValue == "track" }.compactMap { $0["extra"]?.objectValue }
        #expect(tracks.map { $0["event"]?.stringValue } == ["E_First_Run", "E_Opened_App", "E_Saved_Bookmark", "E_Opened_New_Tab"])
        #expect(tracks[2]["info"]?.stringValue == "" && tracks[2]["value"]?.stringValue == "0.0" && tracks[2]["messageId"] == nil)
        #expect(tracks[3]["info"]?.stringValue == "from menu" && tracks[3]["value"]?.stringValue == "2.5")
        #expect(tracks[3]["messageId"]?.stringValue == "5111602214338560")
        let devices = Set(events.compactMap { $0["extra"]?["deviceId"]?.stringValue })
        #expect(devices.count == 1)
        // The next launch is the second run, with the attributes set before.
        let again = try Self.client(study, directory: directory)
        try await again.start()
        await again.close()
        let next = study.pings("events").last?.body["events"]?.arrayValue ?? []
        let attributes = next.first { $0["name"]?.stringValue == "start" }?["extra"]?["userAttributes"]?.stringValue ?? ""
        #expect(try WireJSON.decode([String: String].self, from: attributes) == ["Focus Installed": "true"])
        #expect(next.compactMap { $0["extra"]?["event"]?.stringValue } == ["E_Second_Run", "E_Opened_App"])
    }
}
