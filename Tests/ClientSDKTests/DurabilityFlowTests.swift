import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// Nothing lost when the device stops, closes or loses the relay in the middle of something, in memory: answers in
/// flight, a push being fetched, a deletion request the server refused, pings with nowhere to go, a relay that cannot
/// mint a new token.
@Suite struct DurabilityFlowTests {
    typealias Flow = InMemoryFlowTests

    static func telemetryClient(_ study: MemoryStudy, directory: URL, _ adjust: (inout SurveyClientConfiguration) -> Void = { _ in })
        throws -> SurveyClient {
        try SurveyClient(configuration: MemoryStudy.configuration(directory, relay: false, telemetry: true, adjust), transport: study)
    }

    @Test func answersInFlightWhenTheClientClosesAreSentByTheNextOne() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let directory = Flow.directory()
        let client = try Flow.client(study, directory: directory)
        let tap = Flow.EventTap(client)
        try await client.start()
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        study.hold("/upload")
        let submitting = Task { try await client.submit(answers: ["q1": "8"], for: "s1") }
        #expect(await study.until { study.seen("/upload").count == 1 })
        // Closed with the upload unanswered. The answer that comes after close() changes nothing on disk (the
        // directory is no longer this client's): the file stays in the outbox.
        await client.close()
        study.release("/upload")
        _ = await submitting.result
        let next = try Flow.client(study, directory: directory)
        let nextTap = Flow.EventTap(next)
        #expect(await next.status().uploadsWaiting == 1)
        try await next.start()
        #expect(await study.until { nextTap.count(Flow.isSubmitted) == 1 })
        // Sent again under the same name, which the server stores once (Beiwe keys uploads by file name).
        let names = study.seen("/upload").compactMap { $0.form["file_name"] }
        #expect(names.count == 2 && Set(names).count == 1)
        #expect(try study.uploadedAnswers().last == ["q1": "8"])
        #expect(await next.status().uploadsWaiting == 0)
        #expect(await next.pendingSurveys().isEmpty)
        await next.close()
    }

    @Test func aPushBeingFetchedWhenTheClientClosesComesAgainAndIsStoredOnce() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let directory = Flow.directory()
        let client = try Flow.client(study, directory: directory)
        try await client.start()
        #expect(await study.until { study.openStreams == ["tok-1"] })
        study.hold("/download_survey")
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { study.seen("/download_survey").count == 1 })
        await client.close()
        study.release("/download_survey")
        // Not acked: the relay sends it to the next client, which stores and shows it once.
        #expect(study.unacked("tok-1") == ["m1"])
        let next = try Flow.client(study, directory: directory)
        let tap = Flow.EventTap(next)
        try await next.start()
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        try await Task.sleep(for: .milliseconds(100))
        #expect(tap.count(Flow.isAvailable) == 1)
        #expect(await next.pendingSurveys().map(\.scheduleUUIDs) == [["u1"]])
        await next.close()
    }

    @Test func aDeletionRequestTheServerRefusedIsKeptAcrossARestartAndSentFirst() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        let directory = Flow.directory()
        let client = try Self.telemetryClient(study, directory: directory) { $0.telemetry.maxPendingPings = 1 }
        let before = await client.clientID
        client.record(category: "test", name: "private")
        study.setIngestStatus(503)
        try await client.setUploadEnabled(false)
        #expect(study.pings("deletion-request").isEmpty)
        #expect(await client.status().pingsWaiting == 1)
        await client.close()
        study.setIngestStatus(nil)
        let next = try Self.telemetryClient(study, directory: directory) {
            $0.telemetry.uploadEnabled = false
            $0.telemetry.maxPendingPings = 1
        }
        try await next.start()
        #expect(await study.until { study.pings("deletion-request").count == 1 })
        #expect(study.pings().first?.name == "deletion-request")
        #expect(study.pings("deletion-request").first?.body["client_info"]?["client_id"]?.stringValue == before)
        // Nothing else was sent: the events recorded before opting out were deleted.
        #expect(study.pings().count == 1)
        await next.close()
    }

    @Test func pingsWithNowhereToGoWaitForARunWhoseServerTakesThem() async throws {
        let beiwe = MemoryStudy()  // no ingestion route: 404
        let directory = Flow.directory()
        let first = try Self.telemetryClient(beiwe, directory: directory)
        try await first.start()
        first.record(category: "test", name: "kept")
        _ = try? await first.flushTelemetry()
        let waiting = await first.status().pingsWaiting
        #expect(waiting >= 2)
        // No retry loop runs for them: nothing more is asked of the route this run.
        let asked = beiwe.seen.filter { $0.path.hasPrefix("/submit/") }.count
        try await Task.sleep(for: .milliseconds(700))
        #expect(beiwe.seen.filter { $0.path.hasPrefix("/submit/") }.count == asked)
        await first.close()
        // The next run reaches a server that takes them.
        let server = MemoryStudy(ingestsTelemetry: true)
        let second = try Self.telemetryClient(server, directory: directory)
        try await second.start()
        #expect(await server.until { server.pings().count >= waiting })
        let events = server.pings("events").flatMap { $0.body["events"]?.arrayValue ?? [] }.compactMap { $0["name"]?.stringValue }
        #expect(events.contains("kept"))
        await second.close()
    }

    @Test func aRelayThatCannotMintDuringARenewalIsRetriedUntilItCan() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.fail("/v1/devices", status: 503, count: 2)
        study.forget("tok-1")
        // Reported once; minted on the third try (backoff in between), told to the server, streamed on.
        #expect(await study.until { study.openStreams == ["tok-2"] })
        #expect(study.seen("/v1/devices").count == 4)
        #expect(study.seen("/set_fcm_token").last?.form["fcm_token"] == "tok-2")
        #expect(tap.count { if case .error(let error) = $0 { error.code == "token_unregistered" } else { false } } == 1)
        study.push(to: "tok-2", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        await client.close()
    }

    @Test func stopEndsTheRetryLoopAndTheNextStartSendsWhatWaits() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        study.fail("/upload", status: 503, count: 100)
        _ = try? await client.submit(answers: ["q1": "1"], for: "s1")
        await client.stop()
        #expect(client.runtime.outboxRetry.isIdle)
        let tries = study.seen("/upload").count
        try await Task.sleep(for: .milliseconds(800))
        #expect(study.seen("/upload").count == tries, "uploads after stop()")
        study.clearFaults("/upload")
        try await client.start()
        #expect(await study.until { tap.count(Flow.isSubmitted) == 1 })
        await client.close()
    }
}
