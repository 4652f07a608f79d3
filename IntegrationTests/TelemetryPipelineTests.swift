import ClientSDK
import Foundation
import Synchronization
import SurveyWire
import Testing
import TrioTesting

/// A device clock a test can move.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    func advance(days: Double) { offset.withLock { $0 += days * 86_400 } }
    var now: @Sendable () -> Date { { [self] in Date().addingTimeInterval(offset.withLock { $0 }) } }
}

extension Integration {
/// Glean's pipeline in the SDK against the real mock server: session pings, sequence numbers, rate limit, quotas,
/// maximum age, opting out, and the MMA analytics surface.
@Suite(.timeLimit(.minutes(2))) struct TelemetryPipelineTests {
    func makeClient(_ trio: Trio, _ setup: StudySetup, storage: URL = temporaryDirectory("telemetry"),
                    _ adjust: (inout SurveyClientConfiguration) -> Void = { _ in }, now: @escaping @Sendable () -> Date = { Date() }) throws -> SurveyClient {
        var configuration = clientConfiguration(trio, setup.credentials, storage: storage)
        configuration.heartbeatInterval = nil
        adjust(&configuration)
        return try SurveyClient(configuration: configuration, now: now)
    }

    func reasons(_ pings: [AdminWire.StoredPing]) -> [String] {
        pings.compactMap { $0.body["ping_info"]?["reason"]?.stringValue }
    }

    func seqs(_ pings: [AdminWire.StoredPing]) -> [Int] {
        pings.compactMap { $0.body["ping_info"]?["seq"]?.numberValue.map { Int($0) } }.sorted()
    }

    @Test func sessionsMakeBaselineAndEventsPingsNumberedWithoutGaps() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let client = try makeClient(trio, setup)
            try await client.start()
            #expect(await client.isActive)
            client.record(category: "app", name: "opened", extra: ["screen": "home"])
            await client.pause()
            #expect(await !client.isActive)
            try await client.resume()
            client.record(category: "app", name: "tapped")
            await client.close()
            let id = await client.clientID
            let baseline = try await trio.admin.telemetry(clientID: id, ping: "baseline")
            #expect(reasons(baseline) == ["active", "inactive", "active", "inactive"])
            #expect(seqs(baseline) == [0, 1, 2, 3])
            let duration = baseline[1].body["metrics"]?["timespan"]?["glean.baseline.duration"]
            #expect(duration?["time_unit"]?.stringValue == "second")
            #expect(duration?["value"]?.numberValue != nil)
            let events = try await trio.admin.telemetry(clientID: id, ping: "events")
            #expect(reasons(events) == ["inactive", "inactive"])
            #expect(seqs(events) == [0, 1])
            let first = events[0].body["events"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
            #expect(first.contains("opened") && first.contains("pauseSession") && first.contains("registered"))
            let second = events[1].body["events"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
            #expect(second == ["resumeSession", "tapped", "pauseSession"])
            #expect(try await trio.admin.telemetryGaps(clientID: id).allSatisfy { $0.missing.isEmpty })
            #expect(try await trio.admin.telemetryGaps(clientID: id).count == 2)
        }
    }

    @Test func uploadsAreRateLimitedAndTheRestGoWhenTheWindowEnds() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let client = try makeClient(trio, setup) {
                $0.telemetry.pingsPerInterval = 3
                $0.telemetry.rateInterval = .seconds(2)
            }
            try await client.start()  // the baseline ping takes the first slot
            for n in 0..<4 {
                client.record(category: "test", name: "n\(n)")
                _ = try await client.flushTelemetry()
            }
            let id = await client.clientID
            #expect(try await trio.admin.telemetry(clientID: id).count == 3)
            #expect(await client.status().pingsWaiting == 2)
            // The window ends after 2 s; the rest go without anything else happening.
            #expect(try await eventually(.seconds(6)) { try await trio.admin.telemetry(clientID: id, ping: "events").count == 4 })
            #expect(await client.status().pingsWaiting == 0)
            await client.close()
        }
    }

    @Test func quotasAndTheMaximumAgeDeleteTheOldestAndCountThem() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let clock = TestClock()
            let client = try makeClient(trio, setup, { $0.telemetry.maxPendingPings = 3 }, now: clock.now)
            try await trio.admin.setFaults([.init(route: "/submit/*", status: 503, probability: 1)])
            try await client.start()  // its baseline ping waits
            for n in 0..<4 {
                client.record(category: "test", name: "n\(n)")
                _ = try? await client.flushTelemetry()
            }
            // Five pings made, the newest three kept.
            var status = await client.status()
            #expect(status.pingsWaiting == 3)
            #expect(status.pingsDropped == ["count_quota": 2])
            // 31 days later, still unsent: past the 30-day maximum age.
            clock.advance(days: 31)
            _ = try? await client.flushTelemetry()
            status = await client.status()
            #expect(status.pingsWaiting == 0)
            #expect(status.pingsDropped == ["count_quota": 2, "max_age": 3])
            try await trio.admin.setFaults([])
            client.record(category: "test", name: "later")
            _ = try await client.flushTelemetry()
            let stored = try await trio.admin.telemetry(clientID: await client.clientID, ping: "events")
            #expect(stored.count == 1)
            #expect(stored.first?.body["events"]?.arrayValue?.first?["name"]?.stringValue == "later")
            await client.close()
        }
    }

    /// B15: a transport error with no HTTP response at all (nothing listening) is a recoverable failure: the ping stays,
    /// the call returns, and a later upload delivers it.
    @Test func aTransportErrorWithoutAResponseKeepsThePingAndTheLoopGoesOn() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let storage = temporaryDirectory("telemetry")
            var offline = clientConfiguration(trio, setup.credentials, storage: storage)
            offline.serverURL = "http://127.0.0.1:9"  // discard port: connection refused, no response
            offline.telemetryURL = offline.serverURL
            offline.featuresURL = offline.serverURL
            offline.heartbeatInterval = nil
            let client = try SurveyClient(configuration: offline)
            client.record(category: "test", name: "offline")
            var failure: SurveyClientError?
            do throws(SurveyClientError) { _ = try await client.flushTelemetry() } catch { failure = error }
            #expect(failure?.code == "transport")
            #expect(await client.status().pingsWaiting == 1)
            let id = await client.clientID
            await client.close()
            // The same device back online: the kept ping goes.
            let online = try makeClient(trio, setup, storage: storage)
            _ = try await online.flushTelemetry()
            #expect(try await trio.admin.telemetry(clientID: id, ping: "events").count == 1)
            #expect(await online.status().pingsWaiting == 0)
            await online.close()
        }
    }

    @Test func aPingLargerThanTheLimitAfterGzipIsDroppedAndCounted() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let client = try makeClient(trio, setup) { $0.telemetry.maxPingBodyBytes = 1500 }
            try await client.start()
            // 4 kB of JSON that gzip shrinks well under the limit: it goes (the limit applies after gzip).
            var compressible: [String: String] = [:]
            for n in 0..<8 { compressible["k\(n)"] = String(repeating: "x", count: 2000) }  // each truncated to 500 bytes
            client.record(category: "test", name: "compressible", extra: compressible)
            let sent = try #require(try await client.flushTelemetry())
            // 4 kB of random hex does not shrink enough: dropped and counted.
            var random: [String: String] = [:]
            for n in 0..<8 { random["k\(n)"] = (0..<250).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
            client.record(category: "test", name: "random", extra: random)
            #expect(try await client.flushTelemetry() != nil)
            let status = await client.status()
            #expect(status.pingsDropped == ["too_large": 1])
            #expect(status.pingsWaiting == 0)
            #expect(try await trio.admin.telemetry(clientID: await client.clientID, ping: "events").map(\.documentID) == [sent])
            await client.close()
        }
    }

    @Test func optingOutDeletesWhatWaitsAndSendsOneDeletionRequest() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let client = try makeClient(trio, setup)
            try await client.start()
            let before = await client.clientID
            client.record(category: "test", name: "private")
            #expect(await client.status().eventsWaiting > 0)
            try await client.setUploadEnabled(false)
            #expect(await client.clientID == SurveyClient.disabledClientID)
            var status = await client.status()
            #expect(!status.uploadEnabled)
            #expect(status.eventsWaiting == 0)
            #expect(status.pingsWaiting == 0)
            let deletion = try await trio.admin.telemetry(ping: "deletion-request")
            #expect(deletion.map(\.clientID) == [before])
            #expect(reasons(deletion) == ["set_upload_enabled"])
            // Nothing is recorded or sent while opted out, not even the session's pings.
            client.record(category: "test", name: "ignored")
            try await client.track("E_Saved_Bookmark")
            await client.pause()
            status = await client.status()
            #expect(status.eventsWaiting == 0 && status.pingsWaiting == 0)
            #expect(try await trio.admin.telemetry(clientID: before, ping: "events").isEmpty)
            #expect(try await trio.admin.telemetry(clientID: SurveyClient.disabledClientID).isEmpty)
            // Opting in again starts a new client id.
            try await client.setUploadEnabled(true)
            let after = await client.clientID
            #expect(after != before && after != SurveyClient.disabledClientID)
            try await client.resume()
            #expect(try await eventually { try await trio.admin.telemetry(clientID: after, ping: "baseline").count == 1 })
            await client.close()
        }
    }

    @Test func optingOutWhileTheClientWasNotRunningSendsTheDeletionRequestAtStart() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let storage = temporaryDirectory("telemetry")
            let first = try makeClient(trio, setup, storage: storage)
            try await first.start()
            let id = await first.clientID
            await first.close()
            let second = try makeClient(trio, setup, storage: storage) { $0.telemetry.uploadEnabled = false }
            try await second.start()
            let deletion = try await trio.admin.telemetry(ping: "deletion-request")
            #expect(deletion.map(\.clientID) == [id])
            #expect(reasons(deletion) == ["at_init"])
            #expect(await second.clientID == SurveyClient.disabledClientID)
            await second.close()
            // The choice is remembered: a third start with the same configuration sends nothing more.
            let third = try makeClient(trio, setup, storage: storage) { $0.telemetry.uploadEnabled = false }
            try await third.start()
            await third.close()
            #expect(try await trio.admin.telemetry(ping: "deletion-request").count == 1)
        }
    }

    @Test func mmaTrackUsesTheSeedDefaultsAndSessionsBeatEvery15MinutesWhileActive() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let storage = temporaryDirectory("telemetry")
            let client = try makeClient(trio, setup, storage: storage) { $0.telemetry.sessionHeartbeat = .milliseconds(150) }
            try await client.start()
            try await client.setUserAttributes(["Focus Installed": "true", "Telemetry Opt In": "true"])
            try await client.track("E_Saved_Bookmark")
            try await client.track("E_Opened_New_Tab", info: "from menu", value: 2.5, messageID: "5111602214338560")
            try await Task.sleep(for: .milliseconds(500))
            await client.pause()
            // No heartbeat while paused.
            try await Task.sleep(for: .milliseconds(400))
            await client.close()
            let id = await client.clientID
            let events = try await trio.admin.telemetry(clientID: id, ping: "events").flatMap { $0.body["events"]?.arrayValue ?? [] }
                .filter { $0["category"]?.stringValue == "mma" }
            let names = events.compactMap { $0["name"]?.stringValue }
            #expect(names.first == "start")
            #expect(names.last == "pauseSession")
            #expect(names.filter { $0 == "heartbeat" }.count >= 2)
            let tracks = events.filter { $0["name"]?.stringValue == "track" }.compactMap { $0["extra"]?.objectValue }
            #expect(tracks.map { $0["event"]?.stringValue } == ["E_First_Run", "E_Opened_App", "E_Saved_Bookmark", "E_Opened_New_Tab"])
            #expect(tracks[2]["info"]?.stringValue == "" && tracks[2]["value"]?.stringValue == "0.0" && tracks[2]["messageId"] == nil)
            #expect(tracks[3]["info"]?.stringValue == "from menu" && tracks[3]["value"]?.stringValue == "2.5")
            #expect(tracks[3]["messageId"]?.stringValue == "5111602214338560")
            // One random device id, also the user id, on every MMA event.
            let devices = Set(events.compactMap { $0["extra"]?["deviceId"]?.stringValue })
            #expect(devices.count == 1)
            #expect(events.allSatisfy { $0["extra"]?["userId"] == $0["extra"]?["deviceId"] && $0["extra"]?["sdkVersion"] != nil })
            let start = try #require(events.first?["extra"]?.objectValue)
            #expect(start["systemName"]?.stringValue == "Android" && start["timezone"]?.stringValue == "America/Chicago")

            // The next launch is the second run, with the attributes set before.
            let again = try makeClient(trio, setup, storage: storage)
            try await again.start()
            await again.close()
            let next = try await trio.admin.telemetry(clientID: id, ping: "events").last?.body["events"]?.arrayValue ?? []
            let attributes = next.first { $0["name"]?.stringValue == "start" }?["extra"]?["userAttributes"]?.stringValue ?? ""
            #expect(try WireJSON.decode([String: String].self, from: attributes) == ["Focus Installed": "true", "Telemetry Opt In": "true"])
            #expect(next.compactMap { $0["extra"]?["event"]?.stringValue } == ["E_Second_Run", "E_Opened_App"])
            #expect(Set(next.compactMap { $0["extra"]?["deviceId"]?.stringValue }) == devices)
        }
    }
}
}
