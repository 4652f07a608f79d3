import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// What a client does when the relay or the server refuses, in memory: each error once, with its code, thrown to the
/// caller or emitted, and nothing stored lost.
@Suite struct ClientErrorFlowTests {
    typealias Flow = InMemoryFlowTests

    static func isError(_ code: String) -> (SurveyClientEvent) -> Bool {
        { if case .error(let error) = $0 { error.code == code } else { false } }
    }

    static func code(_ call: () async throws -> Void) async -> String? {
        do { try await call() } catch { return (error as? SurveyClientError)?.code }
        return nil
    }

    @Test func aRelayThatRefusesATokenFailsTheStartAndALaterStartWorks() async throws {
        let study = MemoryStudy()
        study.fail("/v1/devices", status: 503)
        let client = try Flow.client(study)
        #expect(await Self.code { try await client.start() } == "relay_refused")
        #expect(study.seen("/register_user").isEmpty)
        #expect(await !client.isRegistered)
        try await client.start()
        #expect(await client.isRegistered && study.mintedTokens == ["tok-1"])
        await client.close()
    }

    @Test func aRefusedRegistrationKeepsTheServersCodeAndACorrectedPasswordWorksInTheSameDirectory() async throws {
        let study = MemoryStudy()
        let directory = Flow.directory()
        study.fail("/register_user", status: 403)
        let first = try Flow.client(study, directory: directory)
        #expect(await Self.code { try await first.start() } == "fault")  // the server's own code is kept
        await first.close()
        study.fail("/register_user", status: 400, code: "push_token_required")
        let second = try Flow.client(study, directory: directory)
        #expect(await Self.code { try await second.start() } == "push_token_required")
        await second.close()
        // The same directory, a corrected configuration: registered, with the token minted the first time.
        let third = try Flow.client(study, directory: directory)
        try await third.start()
        #expect(await third.isRegistered && study.mintedTokens == ["tok-1"])
        #expect(study.seen("/register_user").count == 3)
        await third.close()
    }

    @Test func aStreamTheRelayRefusesIsRetriedWithBackoffAndThenDelivers() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        study.fail("/v1/devices/tok-1/stream", status: 500, count: 3)
        let client = try Flow.client(study)
        let tap = Flow.EventTap(client)
        try await client.start()
        #expect(await study.until { study.openStreams == ["tok-1"] })
        #expect(study.seen.filter { $0.path == "/v1/devices/tok-1/stream" }.count == 4)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        await client.close()
    }

    @Test func anUnreadableRelayMessageIsReportedAndAckedAndTheNextPushArrives() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.pushRaw(to: "tok-1", id: "junk", data: "{not json")
        study.pushRaw(to: "tok-1", id: "other", data: #"{"id":"other","payload":{"type":"weather"},"priority":10,"sent_at":0}"#)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(tap.count(Self.isError("bad_push")) == 2)
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        await client.close()
    }

    @Test func beiwesRefusalOfAFileDeletesItAndTheSurveyStays() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        // Beiwe answers 200 with another text for a file it can never accept.
        study.fail("/upload", status: 200)
        #expect(await Self.code { try await client.submit(answers: ["q1": "1"], for: "s1") } == "upload_rejected")
        let status = await client.status()
        #expect(status.uploadsWaiting == 0 && status.pendingSurveys == ["s1"])
        // Answered again, it goes.
        try await client.submit(answers: ["q1": "2"], for: "s1")
        #expect(await client.status().pendingSurveys.isEmpty)
        await client.close()
    }

    @Test func refusedCredentialsOnUploadKeepTheFile() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        study.fail("/upload", status: 403)
        #expect(await Self.code { try await client.submit(answers: ["q1": "1"], for: "s1") } == "invalid_credentials")
        #expect(await client.status().uploadsWaiting == 1)
        #expect(await study.until { tap.count(Flow.isSubmitted) == 1 })
        await client.close()
    }

    @Test func submittingWithoutRegistrationOrForAnUnknownSurveyIsRefused() async throws {
        let study = MemoryStudy()
        let client = try Flow.client(study)
        #expect(await Self.code { try await client.submit(answers: [:], for: "s1") } == "not_registered")
        try await client.start()
        #expect(await Self.code { try await client.submit(answers: [:], for: "nope") } == "survey_not_found")
        #expect(await Self.code { try await client.receive(push: ["type": "survey"]) } == "bad_push")
        #expect(study.seen("/upload").isEmpty)
        await client.close()
    }
}
