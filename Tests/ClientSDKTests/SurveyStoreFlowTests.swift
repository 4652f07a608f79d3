import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// Stored surveys over time, in memory: occurrences of one survey merged, a push arriving while its survey's answers
/// are on their way, receipts kept until the server takes them, and what a restart remembers.
@Suite struct SurveyStoreFlowTests {
    typealias Flow = InMemoryFlowTests

    static func available(_ tap: Flow.EventTap) -> [StoredSurvey] {
        tap.all.compactMap { if case .surveyAvailable(let stored) = $0 { stored } else { nil } }
    }

    @Test func twoPushesOfOneSurveyMergeTheirOccurrencesAndKeepTheFirstTime() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { Self.available(tap).count == 1 })
        let first = try #require(await client.pendingSurveys().first)
        study.push(to: "tok-1", id: "m2", surveys: ["s1": ["u2"]])
        #expect(await study.until { Self.available(tap).count == 2 })
        let merged = try #require(await client.pendingSurveys().first)
        #expect(await client.pendingSurveys().count == 1)
        #expect(merged.scheduleUUIDs == ["u1", "u2"] && merged.receivedAt == first.receivedAt)
        // One answer covers both occurrences.
        try await client.submit(answers: ["q1": "3"], for: "s1")
        #expect(await client.pendingSurveys().isEmpty)
        #expect(study.seen("/upload").count == 1)
        await client.close()
    }

    @Test func aPushArrivingWhileItsSurveysAnswersUploadIsShownOnceTheyAreTaken() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let (client, tap) = try await Flow.running(study)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { Self.available(tap).count == 1 })
        study.hold("/upload")
        let submitting = Task { try await client.submit(answers: ["q1": "3"], for: "s1") }
        #expect(await study.until { study.seen("/upload").count == 1 })
        // The next occurrence arrives while the answers to the first are on their way: stored, not shown yet.
        study.push(to: "tok-1", id: "m2", surveys: ["s1": ["u2"]])
        #expect(await study.until { study.unacked("tok-1").isEmpty })
        #expect(Self.available(tap).count == 1)
        #expect(await client.pendingSurveys().isEmpty)
        study.release("/upload")
        try await submitting.value
        // Accepted: the answered occurrence goes, the new one is shown.
        #expect(await study.until { Self.available(tap).count == 2 })
        #expect(Self.available(tap).last?.scheduleUUIDs == ["u2"])
        #expect(await client.pendingSurveys().map(\.scheduleUUIDs) == [["u2"]])
        await client.close()
    }

    @Test func receiptsAreKeptUntilTheServerTakesThem() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try Flow.client(study, heartbeat: .milliseconds(100))
        let tap = Flow.EventTap(client)
        try await client.start()
        #expect(await study.until { study.openStreams == ["tok-1"] })
        study.fail("/confirm_notifications", status: 503)
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { Self.available(tap).count == 1 })
        // The confirmation failed: the receipt waits and rides on the next requests (Beiwe reads `notification_uuids`
        // on every one) until one is taken: here the next heartbeat.
        #expect(await study.until { study.seen("/confirm_notifications").count == 1 })
        #expect(await study.until { study.seen("/mobile-heartbeat").contains { $0.form["notification_uuids"] == #"["u1"]"# } })
        #expect(await MemoryStudy.eventually { await client.status().receiptsWaiting == 0 })
        await client.close()
    }

    @Test func aRestartRemembersWhatWasShownAndAnswered() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        study.addSurvey("s2")
        let directory = Flow.directory()
        let first = try Flow.client(study, directory: directory)
        let tap = Flow.EventTap(first)
        try await first.start()
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"], "s2": ["u2"]], nonce: "n1")
        #expect(await study.until { Self.available(tap).count == 2 })
        try await first.submit(answers: ["q1": "9"], for: "s1")
        await first.close()
        // The same push again after the restart (a relay that redelivered it): a duplicate, nothing shown again.
        let second = try Flow.client(study, directory: directory)
        let again = Flow.EventTap(second)
        #expect(await second.pendingSurveys().map(\.surveyID) == ["s2"])
        try await second.start()
        study.push(to: "tok-1", id: "m1-again", surveys: ["s1": ["u1"], "s2": ["u2"]], nonce: "n1")
        #expect(await study.until { again.count { if case .duplicateIgnored("m1-again") = $0 { true } else { false } } == 1 })
        // A different push naming the answered occurrence only (no nonce in common) is a duplicate too.
        study.push(to: "tok-1", id: "m3", surveys: ["s1": ["u1"]], nonce: "n3")
        #expect(await study.until { again.count { if case .duplicateIgnored("m3") = $0 { true } else { false } } == 1 })
        #expect(Self.available(again).isEmpty)
        #expect(study.seen("/download_survey").count == 2)
        await second.close()
    }
}
