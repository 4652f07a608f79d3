import Foundation
import Messaging
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

/// The interleavings that lost surveys or left work running (issues 20 and 34), driven step by step in memory by
/// holding routes: a backlog of withdrawn surveys, a token rotated during registration, a crash between saving a token
/// and telling the server, two uploads of one file, a stream gone silent, `run()`'s ownership, calls after `close()`,
/// the heartbeat's end, the device's own schedule, and a token handed over by the app. (`SDKStateMachineTests` in the
/// integration suite runs the first ones through the real processes.)
@Suite struct SeamFlowTests {
    /// Whether `call` threw `closed`.
    static func isClosed(_ call: () async throws -> Void) async -> Bool {
        do { try await call() } catch { return (error as? SurveyClientError)?.kind == .closed }
        return false
    }

    typealias Flow = InMemoryFlowTests

    static func configuration(_ directory: URL = Flow.directory(), relay: Bool = true, keepalive: Duration = .seconds(25),
                              heartbeat: Duration? = nil, pushSource: PushSource? = nil) -> SurveyClientConfiguration {
        MemoryStudy.configuration(directory, relay: relay) {
            $0.relayKeepalive = keepalive
            $0.heartbeatInterval = heartbeat
            if let pushSource { $0.pushSource = pushSource }
        }
    }

    static func isWithdrawn(_ event: SurveyClientEvent) -> Bool {
        if case .surveyWithdrawn = event { return true }
        return false
    }

    /// Ten pushes whose surveys were deleted after they went out, then a live one: each withdrawn push is acked (final),
    /// so the live one is not stuck behind them.
    @Test func aBacklogOfWithdrawnSurveysDoesNotStallTheLiveOne() async throws {
        let study = MemoryStudy()
        study.addSurvey("live")
        for n in 0..<10 { study.push(to: "tok-1", id: "gone-\(n)", surveys: ["deleted-\(n)": ["u\(n)"]]) }
        study.push(to: "tok-1", id: "live", surveys: ["live": ["u-live"]])
        let (client, tap) = try await Flow.running(study)
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(await study.until { tap.count(Self.isWithdrawn) == 10 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        #expect(await client.pendingSurveys().map(\.surveyID) == ["live"])
        await client.close()
    }

    /// The relay forgets the token while registration (carrying it) is on its way: the new token reaches the server.
    @Test func aTokenRotatedDuringRegistrationReachesTheServer() async throws {
        let study = MemoryStudy()
        study.hold("/register_user")
        let client = try SurveyClient(configuration: Self.configuration(), transport: study)
        let starting = Task { try await client.start() }
        #expect(await study.until { study.seen("/register_user").count == 1 })
        study.forget("tok-1")
        #expect(await study.until { study.mintedTokens == ["tok-1", "tok-2"] })
        study.release("/register_user")
        try await starting.value
        #expect(study.seen("/register_user").first?.form["fcm_token"] == "tok-1")
        #expect(study.seen("/set_fcm_token").last?.form["fcm_token"] == "tok-2")
        #expect(await client.pushToken == "tok-2")
        #expect(await study.until { study.openStreams == ["tok-2"] })
        await client.close()
    }

    /// A new token saved but not yet told to the server when the device dies: the next start tells it, without minting
    /// another or registering again.
    @Test func aCrashBetweenSavingATokenAndTellingTheServerIsFinishedAtTheNextStart() async throws {
        let study = MemoryStudy()
        let directory = Flow.directory()
        let client = try SurveyClient(configuration: Self.configuration(directory), transport: study)
        try await client.start()
        study.hold("/set_fcm_token")
        study.forget("tok-1")
        #expect(await study.until { study.seen("/set_fcm_token").last?.form["fcm_token"] == "tok-2" })
        // The device dies here: its directory as it is now, opened by the next run (against a relay that knows tok-2).
        let copy = Flow.directory()
        try FileManager.default.copyItem(at: directory, to: copy)
        try? FileManager.default.removeItem(at: copy.appendingPathComponent("lock"))
        let after = MemoryStudy()
        let next = try SurveyClient(configuration: Self.configuration(copy), transport: after)
        try await next.start()
        #expect(after.mintedTokens.isEmpty && after.seen("/register_user").isEmpty)
        #expect(after.seen("/set_fcm_token").map { $0.form["fcm_token"] } == ["tok-2"])
        #expect(await after.until { after.openStreams == ["tok-2"] })
        await next.close()
        study.release("/set_fcm_token")
        await client.close()
    }

    /// `submit` and the retry loop never POST one file at once (`.submitted` and its telemetry came twice).
    @Test func anUploadIsNeverPostedTwiceAtOnce() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        study.hold("/upload")
        let submitting = Task { try await client.submit(answers: ["q1": "5"], for: "s1") }
        #expect(await study.until { study.seen("/upload").count == 1 })
        // The retry loop's attempt while the upload is in flight skips the file.
        #expect(await client.attemptOutboxes() == false)
        // So does a second submit of the same survey: it is being submitted.
        await #expect(throws: SurveyClientError.self) { try await client.submit(answers: ["q1": "6"], for: "s1") }
        study.release("/upload")
        try await submitting.value
        #expect(study.seen("/upload").count == 1)
        #expect(await study.until { tap.count(Flow.isSubmitted) == 1 })
        #expect(await client.attemptOutboxes())
        await client.close()
    }

    /// A stream that goes silent without a FIN is declared dead after 2.5 keepalive periods and replaced; the push sent
    /// meanwhile surfaces exactly once.
    @Test func aSilentStreamIsReplacedAndThePushSurfacesOnce() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try SurveyClient(configuration: Self.configuration(keepalive: .milliseconds(200)), transport: study)
        let tap = Flow.EventTap(client)
        try await client.start()
        #expect(await study.until { study.openStreams == ["tok-1"] })
        let opened = study.seen.filter { $0.path.hasSuffix("/stream") }.count
        study.silence("tok-1")
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(tap.count { if case .streamReconnecting("dead") = $0 { true } else { false } } >= 1)
        #expect(study.seen.filter { $0.path.hasSuffix("/stream") }.count > opened)
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        try await Task.sleep(for: .milliseconds(600))
        #expect(tap.count(Flow.isAvailable) == 1)
        await client.close()
    }

    /// `run()` owns the client: cancelling its task closes the client, and once it returned nothing of it runs.
    @Test func runOwnsTheClientUntilItsTaskIsCancelled() async throws {
        let study = MemoryStudy()
        let directory = Flow.directory()
        let client = try SurveyClient(configuration: Self.configuration(directory, heartbeat: .milliseconds(50)), transport: study)
        let running = Task { try await client.run() }
        #expect(await study.until { study.openStreams == ["tok-1"] && study.seen("/mobile-heartbeat").count >= 2 })
        running.cancel()
        try await running.value
        #expect(await client.isClosed)
        let requests = study.seen.count
        try await Task.sleep(for: .milliseconds(200))
        #expect(study.seen.count == requests, "requests after run() returned")
        #expect(study.openStreams.isEmpty)
        // The directory is free at once.
        let next = try SurveyClient(configuration: Self.configuration(directory), transport: study)
        #expect(await next.isRegistered)
        await next.close()
    }

    /// Every throwing call after `close()` throws `closed`; the others do nothing.
    @Test func everyCallAfterCloseThrowsClosed() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try SurveyClient(configuration: Self.configuration(), transport: study)
        try await client.start()
        await client.close()
        #expect(await Self.isClosed { try await client.start() })
        #expect(await Self.isClosed { try await client.submit(answers: [:], for: "s1") })
        #expect(await Self.isClosed { _ = try await client.checkForSurveys() })
        #expect(await Self.isClosed { _ = try await client.runLocalSchedule() })
        #expect(await Self.isClosed { _ = try await client.receive(push: ["type": "survey"]) })
        #expect(await Self.isClosed { try await client.updatePushToken("t") })
        #expect(await Self.isClosed { _ = try await client.flushTelemetry() })
        #expect(await Self.isClosed { _ = try await client.refreshFeatures() })
        #expect(await Self.isClosed { _ = try await client.messagingRecipe() })
        #expect(await Self.isClosed { _ = try await client.featureValue("messaging", defaults: [String: String]()) })
        let context = AppContext(appName: "Firefox", locale: "en-US", installationDate: Date())
        #expect(await Self.isClosed { _ = try await client.nextMessage(for: "microsurvey", context: context) })
        #expect(await Self.isClosed { _ = try await client.recordBehavior("homepage_viewed") })
        #expect(await Self.isClosed { try await client.track("E_Saved_Bookmark") })
        #expect(await Self.isClosed { try await client.setUserAttributes(["a": "b"]) })
        #expect(await Self.isClosed { try await client.setUploadEnabled(false) })
        #expect(await Self.isClosed { try await client.resume() })
        let requests = study.seen.count
        await client.stop()
        await client.close()
        #expect(study.seen.count == requests)
    }

    /// A closed client's directory may be the next client's: what the closed one is still asked to do (opt out, flush,
    /// resume) touches none of the next one's telemetry. Before, opting out deleted the new owner's events, a flush
    /// renamed its open log into a batch numbered by the closed client (later dropped as already sent), and a resume
    /// made and uploaded pings from its queue.
    @Test func aClosedClientLeavesTheNextOwnersTelemetryAlone() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let directory = InMemoryFlowTests.directory()
        let first = try TelemetryFlowTests.client(study, directory: directory)
        try await first.start()
        await first.close()
        let next = try TelemetryFlowTests.client(study, directory: directory) { $0.telemetryURL = nil }
        for n in 0..<3 { next.record(category: "test", name: "kept\(n)") }
        let waiting = await next.status()
        let sent = study.pings().count
        #expect(await Self.isClosed { try await first.setUploadEnabled(false) })
        _ = try? await first.flushTelemetry()
        #expect(await Self.isClosed { try await first.resume() })
        await first.pause()
        let after = await next.status()
        #expect(after.eventsWaiting == waiting.eventsWaiting && after.eventsWaiting >= 3)
        #expect(after.pingsWaiting == waiting.pingsWaiting)
        #expect(study.pings().count == sent)
        #expect(study.pings("deletion-request").isEmpty)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("telemetry").path)
        #expect(files == ["events.jsonl"], "\(files)")
        let log = try Data(contentsOf: directory.appendingPathComponent("telemetry/events.jsonl"))
        #expect(log.split(separator: 10).count == after.eventsWaiting)
        await next.close()
    }

    /// A closed client that reads a file it cannot decode leaves it where it is: the directory may be the next
    /// client's, and the file one that client (a newer SDK) wrote.
    @Test func aClosedClientQuarantinesNothing() async throws {
        let study = MemoryStudy()
        let directory = InMemoryFlowTests.directory()
        let client = try SurveyClient(configuration: Self.configuration(directory), transport: study)
        await client.close()
        let file = directory.appendingPathComponent("surveys/s9.json")
        try Data("{\"written by\": \"a later format\"}".utf8).write(to: file)
        #expect(await client.pendingSurveys().isEmpty)
        #expect(FileManager.default.fileExists(atPath: file.path))
        #expect(await client.status().quarantined.isEmpty)
    }

    /// Beiwe's heartbeat runs while the client runs, and ends with `stop()`.
    @Test func theHeartbeatBeatsWhileRunningAndEndsWithStop() async throws {
        let study = MemoryStudy()
        let client = try SurveyClient(configuration: Self.configuration(heartbeat: .milliseconds(50)), transport: study)
        try await client.start()
        #expect(await study.until { study.seen("/mobile-heartbeat").count >= 3 })
        await client.stop()
        let beats = study.seen("/mobile-heartbeat").count
        try await Task.sleep(for: .milliseconds(250))
        #expect(study.seen("/mobile-heartbeat").count == beats)
        // Started again, it beats again.
        try await client.start()
        #expect(await study.until { study.seen("/mobile-heartbeat").count > beats })
        await client.close()
    }

    /// An old-style study: the device downloads the list and fires the survey at its time by its own clock, once.
    @Test func anOldStyleStudysSurveyFiresOnTheDeviceAtItsTime() async throws {
        let study = MemoryStudy()
        study.setScheduling("device")
        study.addSurvey("daily", timings: Array(repeating: [9 * 3600], count: 7))
        let clock = Mutex(WireTime.parse("2026-11-26T14:58:00Z")!)  // 08:58 in Chicago
        let client = try SurveyClient(configuration: Self.configuration(relay: false), transport: study,
                                      now: { clock.withLock { $0 } })
        let tap = Flow.EventTap(client)
        try await client.start()
        #expect(study.seen("/download_surveys").count == 1)
        #expect(await client.pendingSurveys().isEmpty)
        clock.withLock { $0 = $0.addingTimeInterval(180) }  // 09:01
        let fired = try await client.runLocalSchedule()
        #expect(fired.map(\.surveyID) == ["daily"])
        #expect(fired.first?.scheduleUUIDs.first?.hasPrefix("local-daily-2026-11-26T09:00") == true)
        #expect(try await client.runLocalSchedule().isEmpty)
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        // The study drops the survey: the next download forgets the unanswered copy.
        study.removeSurvey("daily")
        _ = try await client.checkForSurveys()
        #expect(await client.pendingSurveys().isEmpty)
        await client.close()
    }

    /// A token from the app's own push service: told to the server after registration, and a failed telling is retried
    /// in the background until it succeeds.
    @Test func aTokenHandedOverByTheAppReachesTheServerAndAFailureIsRetried() async throws {
        let study = MemoryStudy()
        let client = try SurveyClient(configuration: Self.configuration(relay: false, pushSource: .external), transport: study)
        try await client.updatePushToken("fcm-1")
        #expect(study.seen("/set_fcm_token").isEmpty)  // not registered yet
        try await client.start()
        #expect(study.mintedTokens.isEmpty)
        #expect(study.seen("/set_fcm_token").map { $0.form["fcm_token"] } == ["fcm-1"])
        study.fail("/set_fcm_token", status: 503)
        await #expect(throws: SurveyClientError.self) { try await client.updatePushToken("fcm-2") }
        #expect(await study.until { study.seen("/set_fcm_token").count == 3 })
        #expect(study.seen("/set_fcm_token").last?.form["fcm_token"] == "fcm-2")
        #expect(await client.pushToken == "fcm-2")
        await #expect(throws: SurveyClientError.self) { try await client.updatePushToken("") }
        await client.close()
    }
}
