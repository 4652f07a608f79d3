import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// `survey-cli trace`: a push's journey joined from the three processes, and where it stopped.
@Suite(.timeLimit(.minutes(2))) struct PushTraceTests {
    /// A study whose survey falls due at 14:00 UTC, a registered device, and the clock moved past it.
    func pushed(_ trio: Trio, name: String) async throws -> (setup: StudySetup, device: SurveyClient, recorder: EventRecorder) {
        let setup = try await StudySetup.make(trio, survey: tenOClockSurvey)
        let device = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: temporaryDirectory(name)))
        let recorder = EventRecorder(device)
        try await device.start()
        return (setup, device, recorder)
    }

    @Test func aCompleteJourneyHasEveryStepInOrder() async throws {
        try await Trio.with { trio in
            let (setup, device, recorder) = try await pushed(trio, name: "trace-ok")
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 3600 + 120)
            let (survey, _) = try await recorder.survey()
            try await device.submit(answers: ["mood": "5"], for: survey.surveyID)
            await device.close()
            let trace = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: setup.credentials.patientID,
                                                 push: nil, deviceDirectory: nil, http: trio.http)
            #expect(trace.stoppedAt == nil, "\(trace.text())")
            #expect(trace.steps.map(\.step) == ["scheduled", "sent", "accepted", "delivered", "acked", "fetched", "uploaded", "decrypted"])
            #expect(trace.steps.first { $0.step == "sent" }?.detail == "relay 200")
            // By push uuid, and through the CLI (exit 0, JSON with the same steps).
            let byPush = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: nil, push: trace.push,
                                                  deviceDirectory: nil, http: trio.http)
            #expect(byPush.steps.map(\.step) == trace.steps.map(\.step))
            let (status, output) = try runSurveyCLI(["trace", "--server", trio.server.url, "--relay", trio.relay.url, "--push", trace.push, "--json"])
            #expect(status == 0)
            let decoded = try WireJSON.decode(PushTrace.self, from: Data(output.utf8))
            #expect(decoded.steps.map(\.step) == trace.steps.map(\.step) && decoded.stoppedAt == nil)
            // Drawn: one bar per step, nothing fetched.
            let page = trace.html()
            #expect(page.components(separatedBy: "class=\"step\"").count - 1 == trace.steps.count)
            #expect(page.contains("complete") && !page.contains("<script") && !page.contains("src="))
        }
    }

    @Test func aPushDroppedByTheRelayStopsThere() async throws {
        try await Trio.with { trio in
            let (setup, device, _) = try await pushed(trio, name: "trace-drop")
            let token = try #require(await device.pushToken)
            try await trio.control.setFaults(RelayWire.Faults(seed: 1, token: token, dropRate: 1))
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 3600 + 120)
            let trace = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: setup.credentials.patientID,
                                                 push: nil, deviceDirectory: nil, http: trio.http)
            await device.close()
            #expect(trace.stoppedAt?.hasPrefix("dropped at the relay") == true, "\(trace.text())")
            #expect(!trace.steps.contains { $0.step == "delivered" })
            let (status, text) = try runSurveyCLI(["trace", "--server", trio.server.url, "--relay", trio.relay.url, "--participant", setup.credentials.patientID])
            #expect(status == 1 && text.contains("stopped at: dropped at the relay"))
        }
    }

    @Test func aJourneyStuckBehindAnUploadFailureStopsAtTheUpload() async throws {
        try await Trio.with { trio in
            let (setup, device, recorder) = try await pushed(trio, name: "trace-upload")
            try await trio.admin.setFaults([AdminWire.FaultRule(route: "/upload", status: 503, probability: 1)])
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 3600 + 120)
            let (survey, _) = try await recorder.survey()
            try? await device.submit(answers: ["mood": "5"], for: survey.surveyID)
            await device.close()
            let trace = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: setup.credentials.patientID,
                                                 push: nil, deviceDirectory: nil, http: trio.http)
            #expect(trace.steps.contains { $0.step == "fetched" })
            #expect(trace.stoppedAt?.hasPrefix("uploaded") == true, "\(trace.text())")
            #expect(!trace.steps.contains { $0.step == "decrypted" })
        }
    }
}
}
