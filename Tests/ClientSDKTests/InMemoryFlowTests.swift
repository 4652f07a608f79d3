import Foundation
import Synchronization
import SurveyWire
import Testing
import Transport
@testable import ClientSDK

/// Whole client flows against ``MemoryStudy`` (a study server and a relay in memory, through the `HTTPTransport`
/// seam): registration, push → fetch → ack → answer → upload, token renewal, Beiwe's routes, and the interleavings
/// that were bugs, each driven step by step by holding a route. No process, no socket.
@Suite struct InMemoryFlowTests {
    /// Collects a client's events (its stream has one consumer).
    final class EventTap: Sendable {
        final class Store: Sendable {
            let events = Mutex<[SurveyClientEvent]>([])
        }
        private let store = Store()
        private let task: Task<Void, Never>

        init(_ client: SurveyClient) {
            let store = store
            task = Task { for await event in client.events { store.events.withLock { $0.append(event) } } }
        }
        deinit { task.cancel() }

        var all: [SurveyClientEvent] { store.events.withLock { $0 } }

        func count(_ match: (SurveyClientEvent) -> Bool) -> Int { all.filter(match).count }
    }

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("sdk-memory-\(UUID().uuidString.prefix(8))")
    }

    static func client(_ study: MemoryStudy, directory: URL = directory(), heartbeat: Duration? = nil,
                       relay: Bool = true) throws -> SurveyClient {
        try SurveyClient(configuration: MemoryStudy.configuration(directory, relay: relay) { $0.heartbeatInterval = heartbeat }, transport: study)
    }

    /// A client of `study`, started, with its push stream open, and the tap on its events.
    static func running(_ study: MemoryStudy) async throws -> (SurveyClient, EventTap) {
        let client = try Self.client(study)
        let tap = EventTap(client)
        try await client.start()
        #expect(await study.until { !study.openStreams.isEmpty })
        return (client, tap)
    }

    static func isAvailable(_ event: SurveyClientEvent) -> Bool {
        if case .surveyAvailable = event { return true }
        return false
    }

    static func isSubmitted(_ event: SurveyClientEvent) -> Bool {
        if case .submitted = event { return true }
        return false
    }

    @Test func aPushBecomesAStoredSurveyWhoseAnswersAreUploadedEncrypted() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try Self.client(study)
        let tap = EventTap(client)
        try await client.start()
        #expect(study.mintedTokens == ["tok-1"])
        #expect(study.seen("/register_user").first?.form["fcm_token"] == "tok-1")
        // Beiwe stores a token only through /set_fcm_token, which follows registration.
        #expect(study.seen("/set_fcm_token").map { $0.form["fcm_token"] } == ["tok-1"])
        #expect(await study.until { study.openStreams == ["tok-1"] })

        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Self.isAvailable) == 1 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        #expect(study.seen("/download_survey").first?.form["schedule_uuid"] == "u1")
        #expect(await client.pendingSurveys().map(\.surveyID) == ["s1"])

        try await client.submit(answers: ["q1": "7"], for: "s1")
        #expect(try study.uploadedAnswers() == [["q1": "7"]])
        #expect(await client.pendingSurveys().isEmpty)
        #expect(await study.until { tap.count(Self.isSubmitted) == 1 })
        // The receipt of u1 was confirmed.
        #expect(study.seen("/confirm_notifications").contains { $0.form["notification_uuids"] == "[\"u1\"]" })
        #expect(await client.status().receiptsWaiting == 0)
        await client.close()
    }

    @Test func aRepeatedPushIsAckedAndIgnored() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Self.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]], nonce: "n1")
        #expect(await study.until { tap.count(Self.isAvailable) == 1 })
        study.push(to: "tok-1", id: "m2", surveys: ["s1": ["u1"]], nonce: "n1")
        #expect(await study.until { tap.count { if case .duplicateIgnored("m2") = $0 { true } else { false } } == 1 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        #expect(study.seen("/download_survey").count == 1)
        await client.close()
    }

    /// Answers whose upload failed stay in the outbox and go out from the retry loop (``OutboxRetryMachine``) once the
    /// server takes them again; `.submitted` follows once, and the loop ends with the outbox empty.
    @Test func anUploadThatFailedIsRetriedInTheBackgroundUntilTaken() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Self.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Self.isAvailable) == 1 })
        study.fail("/upload", status: 503, count: 2)
        await #expect(throws: SurveyClientError.self) { try await client.submit(answers: ["q1": "4"], for: "s1") }
        #expect(await client.status().uploadsWaiting == 1)
        // First retry after 0.25–0.5 s (still 503), the second after 0.5–1 s.
        #expect(await study.until { tap.count(Self.isSubmitted) == 1 })
        #expect(study.seen("/upload").count == 3)
        #expect(try study.uploadedAnswers().last == ["q1": "4"])
        #expect(await client.status().uploadsWaiting == 0)
        #expect(await MemoryStudy.eventually { client.runtime.outboxRetry.isIdle }, "the retry loop still runs with the outbox empty")
        await client.close()
    }

    /// A fetch that failed for a reason that may pass is retried on the live stream (no reconnect), and the push is
    /// acked only once the survey is stored.
    @Test func aFailedFetchIsRetriedOnTheLiveStreamAndAckedOnlyOnceStored() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        study.fail("/download_survey", status: 503)
        let (client, tap) = try await Self.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { study.seen("/download_survey").count == 1 })
        #expect(study.unacked("tok-1") == ["m1"])
        #expect(await study.until { tap.count(Self.isAvailable) == 1 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        #expect(study.seen("/download_survey").count == 2)
        #expect(study.seen("/v1/devices/tok-1/stream").count == 1)
        // The failure was reported once.
        #expect(tap.count { if case .error(let e) = $0 { e.code == "download_failed" } else { false } } == 1)
        await client.close()
    }

    /// A survey deleted after its push went out is withdrawn and the push acked: no retry can bring it back.
    @Test func aPushForADeletedSurveyIsWithdrawnAndAcked() async throws {
        let study = MemoryStudy()
        let (client, tap) = try await Self.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["gone": ["u1"]])
        #expect(await study.until { tap.count { if case .surveyWithdrawn(surveyID: "gone", _) = $0 { true } else { false } } == 1 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        await client.close()
    }

    /// Issue 33: against Beiwe's routes alone, a pushed survey comes from `/download_surveys` and its receipt rides on
    /// the heartbeat (`notification_uuids`); neither missing route is asked twice.
    @Test func againstBeiwesRoutesAPushIsTakenFromTheListAndItsReceiptRidesOnTheHeartbeat() async throws {
        let study = MemoryStudy(beiweOnly: true)
        study.addSurvey("s1")
        study.addSurvey("s2")
        let (client, tap) = try await Self.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Self.isAvailable) == 1 })
        study.push(to: "tok-1", id: "m2", surveys: ["s2": ["u2"]])
        #expect(await study.until { tap.count(Self.isAvailable) == 2 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        #expect(study.seen("/download_survey").count == 1)
        #expect(study.seen("/confirm_notifications").count == 1)
        #expect(study.seen("/mobile-heartbeat").contains { $0.form["notification_uuids"]?.contains("u1") == true })
        #expect(await study.until { study.seen("/mobile-heartbeat").contains { $0.form["notification_uuids"]?.contains("u2") == true } })
        #expect(await client.status().receiptsWaiting == 0)
        #expect(!tap.all.contains { if case .surveyWithdrawn = $0 { true } else { false } })
        await client.close()
    }

    /// A token the relay forgot is renewed: a new token, `/set_fcm_token` with it, and the stream on it, reported
    /// once; the push sent to the new token arrives.
    @Test func aForgottenTokenIsRenewedToldToTheServerAndStreamedOn() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Self.running(study)
        #expect(await study.until { study.openStreams == ["tok-1"] })
        study.forget("tok-1")
        #expect(await study.until { study.openStreams == ["tok-2"] })
        #expect(study.seen("/set_fcm_token").map { $0.form["fcm_token"] } == ["tok-1", "tok-2"])
        #expect(await client.pushToken == "tok-2")
        study.push(to: "tok-2", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Self.isAvailable) == 1 })
        // Reported once (the events arrive in order: the report came before the survey).
        #expect(tap.count { if case .error(let e) = $0 { e.code == "token_unregistered" } else { false } } == 1)
        await client.close()
    }

    /// A renewal whose token was minted but not yet told to the server retries only the telling, and never mints a
    /// second token.
    @Test func aRenewalMintsOnceAndRetriesOnlyTellingTheServer() async throws {
        let study = MemoryStudy()
        let client = try Self.client(study)
        try await client.start()
        #expect(await study.until { study.openStreams == ["tok-1"] })
        study.fail("/set_fcm_token", status: 503, count: 2)
        study.forget("tok-1")
        #expect(await study.until { study.openStreams == ["tok-2"] })
        #expect(study.mintedTokens == ["tok-1", "tok-2"])
        #expect(study.seen("/set_fcm_token").map { $0.form["fcm_token"] } == ["tok-1", "tok-2", "tok-2", "tok-2"])
        await client.close()
    }

    /// Issue 34: `stop()` during `start()` left a client sending heartbeats with no push stream. Held at registration,
    /// the start is cancelled by the stop, and from the stop's return on nothing of the client runs.
    @Test func aStopDuringStartEndsItAndNothingRunsAfterwards() async throws {
        let study = MemoryStudy()
        study.hold("/register_user")
        let client = try Self.client(study, heartbeat: .milliseconds(20))
        let starting = Task { try await client.start() }
        #expect(await study.until { study.seen("/register_user").count == 1 })
        await client.stop()
        let outcome = await starting.result
        #expect(throws: SurveyClientError.self) { try outcome.get() }
        let after = study.seen.count
        #expect(study.openStreams.isEmpty)
        study.release("/register_user")
        try await Task.sleep(for: .milliseconds(200))
        #expect(study.seen.count == after, "requests after stop: \(study.seen.dropFirst(after).map(\.path))")
        #expect(study.openStreams.isEmpty)
        // It starts again, and runs.
        try await client.start()
        #expect(await study.until { !study.openStreams.isEmpty })
        #expect(await client.isRegistered)
        await client.close()
    }

    /// Issue 34: a client dropped (no `close()`) while its token renewal fails is freed, and its directory can be
    /// opened by a new client.
    @Test func aClientDroppedDuringAFailingRenewalIsFreedAndItsDirectoryReopens() async throws {
        let study = MemoryStudy()
        let directory = Self.directory()
        var client: SurveyClient? = try Self.client(study, directory: directory)
        try await client?.start()
        #expect(await study.until { study.openStreams == ["tok-1"] })
        // The relay mints no token for a while: every renewal attempt fails.
        study.fail("/v1/devices", status: 503, count: 1_000)
        study.forget("tok-1")
        #expect(await study.until { study.seen("/v1/devices").count >= 3 })
        weak let dropped = client
        client = nil
        #expect(await study.until { dropped == nil }, "the client is still held")
        let again = try Self.client(study, directory: directory)
        #expect(await again.isRegistered)
        await again.close()
    }

    /// A client without a relay (`PushSource.external`): an app-handed push is fetched and stored the same way.
    @Test func aPushHandedOverByTheAppIsFetchedAndStored() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try Self.client(study, relay: false)
        try await client.start()
        let push = SurveyPush(surveyIDs: ["s1"], sentTime: "2026-05-04T14:00:00", nonce: "n1", surveyUUIDs: ["s1": ["u1"]])
        let available = try await client.receive(push: push.dataFields())
        #expect(available.map(\.surveyID) == ["s1"])
        #expect(try await client.receive(push: push.dataFields()).isEmpty)
        await client.close()
        // Every call after close() throws closed.
        await #expect(throws: SurveyClientError.self) { try await client.receive(push: push.dataFields()) }
    }
}
