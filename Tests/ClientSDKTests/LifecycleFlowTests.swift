import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

/// A client's life in memory: two starts at once, a dropped connection resumed where it stopped, sessions, and a
/// damaged file among good ones.
@Suite struct LifecycleFlowTests {
    typealias Flow = InMemoryFlowTests

    @Test func twoStartsAtOnceMintOneTokenAndRegisterOnce() async throws {
        let study = MemoryStudy()
        study.hold("/v1/devices")
        let client = try Flow.client(study)
        let first = Task { try await client.start() }
        let second = Task { try await client.start() }
        #expect(await study.until { study.seen("/v1/devices").count == 1 })
        try await Task.sleep(for: .milliseconds(50))
        study.release("/v1/devices")
        try await first.value
        try await second.value
        #expect(study.mintedTokens == ["tok-1"])
        #expect(study.seen("/register_user").count == 1)
        await client.close()
    }

    @Test func aDroppedStreamReconnectsFromTheLastHandledPush() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        study.addSurvey("s2")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 && study.unacked("tok-1").isEmpty })
        study.drop("tok-1")
        #expect(await study.until { study.openStreams == ["tok-1"] })
        let reconnect = try #require(study.seen.last { $0.path == "/v1/devices/tok-1/stream" })
        #expect(reconnect.headers.contains { $0.name == "Last-Event-ID" && $0.value == "m1" })
        study.push(to: "tok-1", id: "m2", surveys: ["s2": ["u2"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 2 })
        await client.close()
    }

    @Test func stopAndStartAgainKeepTheTokenAndTheRegistration() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        await client.stop()
        #expect(await study.until { study.openStreams.isEmpty })
        #expect(await !client.isActive)
        // Pushed while stopped: waits at the relay, comes with the next stream.
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        try await client.start()
        #expect(await client.isActive)
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(study.mintedTokens == ["tok-1"] && study.seen("/register_user").count == 1)
        await client.close()
        #expect(await client.isClosed)
    }

    @Test func pauseAndResumeChangeTheSessionOnlyOnce() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try SurveyClient(configuration: MemoryStudy.configuration(relay: false, telemetry: true), transport: study)
        try await client.start()
        try await client.resume()  // already active: nothing
        await client.pause()
        await client.pause()   // already paused: nothing
        try await client.resume()
        await client.close()
        let reasons = study.pings("baseline").compactMap { $0.body["ping_info"]?["reason"]?.stringValue }
        #expect(reasons == ["active", "inactive", "active", "inactive"])
    }

    @Test func aDamagedStoredSurveyIsQuarantinedAndTheOthersServe() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        study.addSurvey("s2")
        let directory = Flow.directory()
        let first = try Flow.client(study, directory: directory)
        let tap = Flow.EventTap(first)
        try await first.start()
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"], "s2": ["u2"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 2 })
        await first.close()
        // A torn write (power lost mid-file on a filesystem without our rename): s1's file is garbage.
        try Data("{\"surveyID\": \"s1\", \"ent".utf8).write(to: directory.appendingPathComponent("surveys/s1.json"))
        let second = try Flow.client(study, directory: directory)
        let status = await second.status()
        #expect(status.pendingSurveys == ["s2"])
        #expect(status.quarantined.count == 1 && status.quarantined.first?.contains("s1") == true)
        // The other survey is answered as usual.
        try await second.start()
        try await second.submit(answers: ["q1": "2"], for: "s2")
        #expect(await second.status().pendingSurveys.isEmpty)
        await second.close()
    }
}

/// Many clients in one process on one transport (as `DeviceHost` runs them), and the server's survey-check frequency.
@Suite struct FleetFlowTests {
    typealias Flow = InMemoryFlowTests

    @Test func clientsSharingATransportEachGetTheirOwnTokenAndOnlyTheirPushes() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        var clients: [(SurveyClient, Flow.EventTap)] = []
        for _ in 0..<5 {
            let client = try Flow.client(study)
            clients.append((client, Flow.EventTap(client)))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (client, _) in clients { group.addTask { try await client.start() } }
            try await group.waitForAll()
        }
        var tokens: [String] = []
        for (client, _) in clients { tokens.append(try #require(await client.pushToken)) }
        #expect(Set(tokens).count == 5)
        #expect(await study.until { study.openStreams == Set(tokens) })
        study.push(to: tokens[2], id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { clients[2].1.count(Flow.isAvailable) == 1 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(clients.enumerated().allSatisfy { index, pair in pair.1.count(Flow.isAvailable) == (index == 2 ? 1 : 0) })
        for (client, _) in clients { await client.close() }
        #expect(study.openStreams.isEmpty)
    }

    @Test func theServersSurveyCheckFrequencyDecidesWhenTheDeviceDownloadsAgain() async throws {
        let study = MemoryStudy()
        study.setScheduling("device")
        study.setCheckFrequency(5)  // below Beiwe's floor: 30 s
        let clock = Mutex(Date(timeIntervalSince1970: 1_795_800_000))
        let client = try SurveyClient(configuration: SeamFlowTests.configuration(relay: false), transport: study,
                                      now: { clock.withLock { $0 } })
        try await client.start()
        #expect(study.seen("/download_surveys").count == 1)
        clock.withLock { $0 = $0.addingTimeInterval(20) }
        await client.localScheduleTick()
        #expect(study.seen("/download_surveys").count == 1)  // 20 s: not yet (the floor, not 5 s)
        clock.withLock { $0 = $0.addingTimeInterval(11) }
        await client.localScheduleTick()
        #expect(study.seen("/download_surveys").count == 2)
        await client.close()
    }
}

/// The ends of a client's life as an app sees them: the event stream finishing, and `run()` failing.
@Suite struct ClientEndTests {
    typealias Flow = InMemoryFlowTests

    @Test func theEventStreamFinishesWhenTheClientCloses() async throws {
        let study = MemoryStudy()
        let client = try Flow.client(study)
        let reader = Task { () -> Int in
            var count = 0
            for await _ in client.events { count += 1 }
            return count
        }
        try await client.start()
        await client.close()
        // The app's `for await` loop ends by itself; the registration event came before.
        #expect(await reader.value >= 1)
    }

    /// A start that fails leaves nothing running (its stream, opened before the registration, is closed again) and the
    /// client idle: the next start, with the server's refusal gone, runs as a first one.
    @Test func aFailedStartLeavesNothingRunningAndTheNextStartWorks() async throws {
        let study = MemoryStudy()
        study.fail("/register_user", status: 403, code: "invalid_credentials")
        let client = try Flow.client(study)
        var caught: SurveyClientError?
        do { try await client.start() } catch { caught = error }
        #expect(caught?.kind == .invalidCredentials)
        #expect(await study.until { study.openStreams.isEmpty })
        try await Task.sleep(for: .milliseconds(300))
        #expect(study.openStreams.isEmpty)
        #expect(await !client.isActive)
        try await client.start()
        #expect(await client.isRegistered)
        #expect(await study.until { study.openStreams == ["tok-1"] })
        #expect(study.mintedTokens == ["tok-1"])
        await client.close()
    }

    @Test func runThrowsWhatStartThrowsAndLeavesTheClientClosed() async throws {
        let study = MemoryStudy()
        study.fail("/register_user", status: 403, code: "invalid_credentials")
        let directory = Flow.directory()
        let client = try Flow.client(study, directory: directory)
        var caught: SurveyClientError?
        do { try await client.run() } catch { caught = error }
        #expect(caught?.kind == .invalidCredentials)
        #expect(await client.isClosed)
        #expect(study.openStreams.isEmpty)
        // Its directory is free for a client with better credentials.
        let next = try Flow.client(study, directory: directory)
        try await next.start()
        #expect(await next.isRegistered)
        await next.close()
    }
}
