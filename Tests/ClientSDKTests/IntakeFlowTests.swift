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
