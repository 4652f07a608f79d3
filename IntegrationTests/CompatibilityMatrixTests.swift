import ClientSDK
import Foundation
import Scheduling
import Synchronization
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// A device clock a test moves by hand.
final class ManualClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: String) { value = Mutex(WireTime.parse(start)!) }
    var now: Date { value.withLock { $0 } }
    func set(_ text: String) { value.withLock { $0 = WireTime.parse(text)! } }
}

/// The scheduling spec's compatibility matrix: old/new app × old/new study.
@Suite(.timeLimit(.minutes(2))) struct CompatibilityMatrixTests {
    @Test func oldAppInOldStudyWorks() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let registered = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                                  extra: [("new_password", "pw"), ("phone_number", "NOT_SUPPLIED"), ("timezone", "America/Chicago")])
            #expect(registered.status == 200)
            #expect(try registered.decode(JSONValue.self)["scheduling"] == "device")
            let surveys = try await mobilePost(trio, "/download_surveys", patientID: setup.credentials.patientID, password: "pw")
            #expect(try surveys.decode([SurveyEntry].self).first?.timings?[1] == [32400])
            #expect(try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 7 * 86400).fired.isEmpty)
        }
    }

    @Test func oldAppInNewStudyIsRefused() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "server")
            let refused = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                               extra: [("new_password", "pw"), ("phone_number", "NOT_SUPPLIED")])
            #expect(refused.status == 400)
            #expect(errorCode(refused) == "push_token_required")
        }
    }

    @Test func newAppInOldStudyFallsBackToDeviceScheduling() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let clock = ManualClock(mondayBeforeNineChicago)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials), now: { clock.now })
            let recorder = EventRecorder(client)
            try await client.start()
            let (scheduling, _) = try await recorder.wait { if case .registered(_, let s, _) = $0 { s } else { nil } }
            #expect(scheduling == "device")
            #expect(await client.pendingSurveys().isEmpty)

            // 09:01 Chicago on the device clock: the survey fires from its timings, with no push.
            clock.set("2026-05-04T14:01:00Z")
            let fired = try await client.checkForSurveys()
            #expect(fired.map(\.surveyID) == [setup.surveyID])
            #expect(fired.first?.scheduleUUIDs == ["local-\(setup.surveyID)-2026-05-04T09:00"])
            let (stored, _) = try await recorder.survey()
            #expect(stored.questions.count == 4)
            // Evaluating again at the same time fires nothing twice.
            #expect(try await client.runLocalSchedule().isEmpty)
            #expect(try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 3600).fired.isEmpty)
            #expect(try await trio.admin.pushes(study: setup.study.studyID).isEmpty)

            try await client.submit(answers: ["mood": "6"], for: setup.surveyID)
            #expect(try await trio.admin.submissions(study: setup.study.studyID).count == 1)

            // A week later it fires again; a survey the study deleted is forgotten at the next check.
            clock.set("2026-05-11T14:05:00Z")
            #expect(try await client.runLocalSchedule().map(\.surveyID) == [setup.surveyID])
            try await trio.admin.deleteSurvey(setup.surveyID)
            _ = try await client.checkForSurveys()
            #expect(await client.pendingSurveys().isEmpty)
            await client.close()
        }
    }

    @Test func newAppInNewStudyUsesPushes() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "server")
            let clock = ManualClock(mondayBeforeNineChicago)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials), now: { clock.now })
            let recorder = EventRecorder(client)
            try await client.start()
            clock.set("2026-05-04T14:01:00Z")
            // The device does not schedule by itself in a server study.
            #expect(try await client.runLocalSchedule().isEmpty)
            #expect(try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120).fired.map(\.status) == ["sent"])
            let (stored, _) = try await recorder.survey()
            #expect(stored.surveyID == setup.surveyID)
            #expect(!stored.scheduleUUIDs.first!.hasPrefix("local-"))
            await client.close()
        }
    }
}
}
