import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// Pushes naming several surveys, in memory: each survey reaches its own outcome, only the failed ones are fetched
/// again, and the push is acknowledged once all are final; the same for pushes the app hands over.
@Suite struct IntakeFlowTests {
    typealias Flow = InMemoryFlowTests

    static func withdrawn(_ tap: Flow.EventTap) -> [String] {
        tap.all.compactMap { if case .surveyWithdrawn(let id, _) = $0 { id } else { nil } }
    }

    @Test func aPushOfThreeSurveysStoresOneWithdrawsOneAndRetriesOnlyTheFailedOne() async throws {
        let study = MemoryStudy()
        study.addSurvey("ok")
        study.addSurvey("flaky")
        let (client, tap) = try await Flow.running(study)
        // Fetched in the order of the push's ids (sorted): "flaky" fails once, "gone" does not exist.
        study.fail("/download_survey", status: 503)
        study.push(to: "tok-1", id: "m1", surveys: ["flaky": ["u1"], "gone": ["u2"], "ok": ["u3"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(await study.until { Self.withdrawn(tap) == ["gone"] })
        // Not acked while one survey waits for its retry.
        #expect(study.unacked("tok-1") == ["m1"])
        #expect(await study.until { tap.count(Flow.isAvailable) == 2 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        // The retry asked for the failed survey only.
        let fetched = study.seen("/download_survey").compactMap { $0.form["survey_id"] }
        #expect(fetched.filter { $0 == "ok" }.count == 1 && fetched.filter { $0 == "gone" }.count == 1)
        #expect(fetched.filter { $0 == "flaky" }.count == 2)
        // The error was reported once.
        #expect(tap.count { if case .error(let error) = $0 { error.code == "download_failed" } else { false } } == 1)
        #expect(Set(await client.pendingSurveys().map(\.surveyID)) == ["ok", "flaky"])
        await client.close()
    }

    /// What `receive(push:)` returns is what `.surveyAvailable` announces: a pending survey given a further occurrence
    /// is in both (it returned nothing while the event announced it), a survey whose answers are still being uploaded in
    /// neither.
    @Test func anAppHandedPushReturnsWhatItAnnounces() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        study.addSurvey("s2")
        let client = try Flow.client(study, relay: false)
        let tap = Flow.EventTap(client)
        try await client.start()
        let first = SurveyPush(surveyIDs: ["s1"], sentTime: "2026-05-04T14:00:00", nonce: "n1", surveyUUIDs: ["s1": ["u1"]])
        #expect(try await client.receive(push: first.dataFields()).map(\.surveyID) == ["s1"])
        // A second occurrence of the pending s1, and a new s2.
        let second = SurveyPush(surveyIDs: ["s1", "s2"], sentTime: "2026-05-05T14:00:00", nonce: "n2", surveyUUIDs: ["s1": ["u2"], "s2": ["u3"]])
        let returned = try await client.receive(push: second.dataFields())
        #expect(returned.map(\.surveyID).sorted() == ["s1", "s2"])
        #expect(returned.first { $0.surveyID == "s1" }?.scheduleUUIDs == ["u1", "u2"])
        #expect(await study.until { tap.count(Flow.isAvailable) == 3 })
        // Answers to s2 that the server does not take yet: a further occurrence of s2 is neither returned nor announced.
        study.fail("/upload", status: 503)
        await #expect(throws: SurveyClientError.self) { try await client.submit(answers: [:], for: "s2") }
        let third = SurveyPush(surveyIDs: ["s2"], sentTime: "2026-05-06T14:00:00", nonce: "n3", surveyUUIDs: ["s2": ["u4"]])
        #expect(try await client.receive(push: third.dataFields()).isEmpty)
        // Once the retried upload is taken, s2 with its new occurrence is announced: the fourth announcement, not a fifth.
        #expect(await study.until { tap.count { if case .submitted = $0 { true } else { false } } == 1 })
        #expect(await study.until { tap.count(Flow.isAvailable) == 4 })
        let last = tap.all.compactMap { if case .surveyAvailable(let stored) = $0 { stored } else { nil } }.last
        #expect(last?.surveyID == "s2" && last?.scheduleUUIDs == ["u4"])
        await client.close()
    }

    @Test func anAppHandedPushWhoseFetchFailedIsRetriedInTheBackground() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try Flow.client(study, relay: false)
        let tap = Flow.EventTap(client)
        try await client.start()
        study.fail("/download_survey", status: 503)
        let push = SurveyPush(surveyIDs: ["s1"], sentTime: "2026-05-04T14:00:00", nonce: "n1", surveyUUIDs: ["s1": ["u1"]])
        #expect(try await client.receive(push: push.dataFields()).isEmpty)
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        #expect(await client.pendingSurveys().map(\.surveyID) == ["s1"])
        // Handed over again afterwards (the app's service redelivered it): a duplicate.
        #expect(try await client.receive(push: push.dataFields()).isEmpty)
        #expect(await study.until { tap.count { if case .duplicateIgnored = $0 { true } else { false } } == 1 })
        await client.close()
    }

    @Test func aPushWithoutOccurrenceIdsIsDeDuplicatedByItsNonce() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": []], nonce: "same")
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        study.push(to: "tok-1", id: "m2", surveys: ["s1": []], nonce: "same")
        #expect(await study.until { tap.count { if case .duplicateIgnored("m2") = $0 { true } else { false } } == 1 })
        // Another nonce is another push.
        study.push(to: "tok-1", id: "m3", surveys: ["s1": []], nonce: "other")
        #expect(await study.until { tap.count(Flow.isAvailable) == 2 })
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        await client.close()
    }
}
