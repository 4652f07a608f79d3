import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// Waiting instead of sleeping (PROTOCOL.md §8, issue 35): the admin and control listings answer once `min_count`
/// items match or `wait` ends; the journals filter by participant, token, study and time; an unknown query parameter
/// is refused.
@Suite(.timeLimit(.minutes(2))) struct ListingWaitTests {
    @Test func aListingWaitsForThePushItExpectsAndNoLonger() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            let token = try #require(await client.pushToken)
            // Asked before anything is due: the answer waits for the push.
            let study = setup.study.studyID
            let waiting = Task { () -> ([AdminWire.PushLogEntry], Duration) in
                let started = ContinuousClock.now
                let pushes = try await trio.admin.pushes(study: study, wait: ListingWait(minCount: 1, within: .seconds(20)))
                return (pushes, ContinuousClock.now - started)
            }
            try await Task.sleep(for: .milliseconds(300))
            _ = try await trio.admin.advanceClock(study: study, seconds: 120)
            let (pushes, took) = try await waiting.value
            #expect(pushes.count == 1)
            #expect(took < .seconds(10), "answered \(took) after it was asked")
            // The relay's trace, waiting for the ack.
            let acked = try await trio.control.trace(token: token, event: "acked", wait: ListingWait(minCount: 1, within: .seconds(10)))
            #expect(acked.count == 1 && acked.allSatisfy { $0["event"]?.stringValue == "acked" })
            let submissions = Task { try await trio.admin.submissions(study: study, wait: ListingWait(minCount: 1, within: .seconds(20))) }
            try await client.submit(answers: ["mood": "7"], for: setup.surveyID)
            #expect(try await submissions.value.count == 1)
            // What never comes: the wait ends with what there is.
            let started = ContinuousClock.now
            let none = try await trio.admin.pushes(study: study, wait: ListingWait(minCount: 2, within: .milliseconds(400)))
            #expect(none.count == 1)
            #expect(ContinuousClock.now - started >= .milliseconds(400))
            await client.close()
        }
    }

    @Test func theJournalsFilterAndUnknownParametersAreRefused() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let other = try await trio.admin.createParticipants(study: setup.study.studyID)[0]
            let before = WireTime.format(Date().addingTimeInterval(-1), milliseconds: true)
            for who in [setup.credentials, other] {
                _ = try await mobilePost(trio, "/mobile-heartbeat", patientID: who.patientID, password: who.password)
            }
            let mine = try await trio.admin.requests(participant: setup.credentials.patientID)
            #expect(!mine.isEmpty && mine.allSatisfy { $0.participant == setup.credentials.patientID })
            let ofStudy = try await trio.admin.requests(study: setup.study.studyID)
            #expect(Set(ofStudy.compactMap(\.participant)) == [setup.credentials.patientID, other.patientID])
            #expect(ofStudy.allSatisfy { $0.study == setup.study.studyID })
            #expect(try await trio.admin.requests(since: WireTime.format(Date().addingTimeInterval(60), milliseconds: true)).isEmpty)
            #expect(try await trio.admin.requests(participant: other.patientID, since: before).count == 1)
            // A filter the listing does not take was silently ignored (every item answered): now 400.
            for (base, path) in [(trio.server.url, "/__admin/requests?participnt=x"),
                                 (trio.server.url, "/__admin/studies/\(setup.study.studyID)/pushes?patient=x"),
                                 (trio.server.url, "/__admin/telemetry?client=x"),
                                 (trio.relay.url, "/__control/requests?user=x"),
                                 (trio.relay.url, "/__control/trace?tokn=x")] {
                let response = try await trio.http.send(TransportRequest(url: base + path))
                #expect(response.status == 400 && errorCode(response) == "unknown_parameter", "\(path): \(response.status)")
            }
            for bad in ["wait=forever", "wait=61s", "min_count=0"] {
                let response = try await trio.http.send(TransportRequest(url: trio.server.url + "/__admin/requests?" + bad))
                #expect(response.status == 400 && errorCode(response) == "invalid_field", "\(bad)")
            }
        }
    }
}
}
