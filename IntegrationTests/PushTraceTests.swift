import ClientSDK
import Foundation
import Scheduling
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
            #expect(Set(trace.steps.map(\.step)) == ["scheduled", "sent", "accepted", "delivered", "acked", "fetched", "uploaded", "decrypted"])
            Self.expectOneClock(trace)
            #expect(trace.steps.first { $0.step == "sent" }?.detail == "relay 200")
            // By push uuid, and through the CLI (exit 0, JSON with the same steps).
            let byPush = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: nil, push: trace.push,
                                                  deviceDirectory: nil, http: trio.http)
            #expect(byPush.steps.map(\.step) == trace.steps.map(\.step))
            let (status, output) = try await runSurveyCLI(["trace", "--server", trio.server.url, "--relay", trio.relay.url, "--push", trace.push, "--json"])
            #expect(status == 0)
            let decoded = try WireJSON.decode(PushTrace.self, from: Data(output.utf8))
            #expect(decoded.steps.map(\.step) == trace.steps.map(\.step) && decoded.stoppedAt == nil)
            // Drawn: one bar per step, nothing fetched.
            let page = trace.html()
            #expect(page.components(separatedBy: "class=\"step\"").count - 1 == trace.steps.count)
            #expect(page.contains("complete") && !page.contains("<script") && !page.contains("src="))
        }
    }

    /// Every step in real time, in time order, the whole journey within a minute; each with its study-clock time.
    static func expectOneClock(_ trace: PushTrace, sourceLocation: SourceLocation = #_sourceLocation) {
        let times = trace.steps.compactMap { WireTime.parse($0.at) }
        #expect(times.count == trace.steps.count, sourceLocation: sourceLocation)
        #expect(times == times.sorted(), "\(trace.text())", sourceLocation: sourceLocation)
        if let first = times.first, let last = times.last {
            #expect(last.timeIntervalSince(first) < 60, "\(trace.text())", sourceLocation: sourceLocation)
            #expect(abs(first.timeIntervalSinceNow) < 300, "real time: \(trace.text())", sourceLocation: sourceLocation)
        }
        #expect(trace.steps.allSatisfy { $0.studyAt != nil }, sourceLocation: sourceLocation)
    }

    /// The study clock ahead of real time (a year ahead): the journey is complete, on one clock (it stopped at
    /// `fetched`, comparing the device's real-time requests with the push's study time).
    @Test func aStudyClockAheadOfRealTimeStillGivesTheWholeJourney() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "Ahead", timezone: "UTC", scheduling: "server",
                                                                clock: .init(frozenAt: "2027-11-01T09:59:00Z")))
            let credentials = try await trio.admin.createParticipants(study: study.studyID)[0]
            var survey = tenOClockSurvey
            survey.schedules = [.absolute(date: LocalDate("2027-11-01")!, time: LocalTime(hour: 10, minute: 0))]
            let surveyID = try await trio.admin.createSurvey(study: study.studyID, survey)
            let storage = temporaryDirectory("trace-ahead")
            let device = try SurveyClient(configuration: clientConfiguration(trio, credentials, storage: storage, timeZone: "UTC"))
            let recorder = EventRecorder(device)
            try await device.start()
            _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 120)
            let (stored, _) = try await recorder.survey()
            #expect(stored.surveyID == surveyID)
            try await device.submit(answers: ["mood": "5"], for: surveyID)
            // The device's events go to the server as a ping: `answered` is found there.
            _ = try await device.flushTelemetry()
            await device.close()
            let trace = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: credentials.patientID,
                                                 push: nil, deviceDirectory: storage, http: trio.http)
            #expect(trace.stoppedAt == nil, "\(trace.text())")
            #expect(trace.steps.contains { $0.step == "answered" }, "\(trace.text())")
            Self.expectOneClock(trace)
            #expect(trace.steps.first { $0.step == "sent" }?.studyAt?.hasPrefix("2027-11-01T10:") == true)
        }
    }

    /// A push dropped after an earlier one was answered: its journey shows none of the earlier push's fetch or upload.
    @Test func aDroppedPushDoesNotBorrowAnEarlierPushsSteps() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let device = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: temporaryDirectory("trace-two")))
            let recorder = EventRecorder(device)
            try await device.start()
            let token = try #require(await device.pushToken)
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            let (first, _) = try await recorder.survey()
            try await device.submit(answers: ["mood": "5"], for: first.surveyID)
            try await trio.control.setFaults(RelayWire.Faults(seed: 1, token: token, dropRate: 1))
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 7 * 86_400)
            let trace = try await PushTrace.make(server: trio.server.url, relay: trio.relay.url, participant: setup.credentials.patientID,
                                                 push: nil, deviceDirectory: nil, http: trio.http)
            await device.close()
            #expect(trace.stoppedAt?.hasPrefix("dropped at the relay") == true, "\(trace.text())")
            #expect(!trace.steps.contains { ["fetched", "uploaded", "decrypted"].contains($0.step) }, "\(trace.text())")
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
            let (status, text) = try await runSurveyCLI(["trace", "--server", trio.server.url, "--relay", trio.relay.url, "--participant", setup.credentials.patientID])
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
