import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The SDK embedded without the trio's relay (issue 14): no push source at all, or pushes the host app receives
/// through a service of its own.
@Suite(.timeLimit(.minutes(2))) struct PushSourceTests {
    @Test func aClientStartsAndWorksWithoutARelay() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            var configuration = clientConfiguration(trio, setup.credentials)
            configuration.relayURL = nil
            #expect(configuration.pushSource == .none)
            let client = try SurveyClient(configuration: configuration)
            try await client.start()
            let status = await client.status()
            #expect(status.registered && status.scheduling == "device" && status.pushToken == nil)
            // The survey list came with /download_surveys at start.
            let fired = try await client.checkForSurveys()
            #expect(fired.isEmpty || fired.map(\.surveyID) == [setup.surveyID])
            #expect(try await trio.admin.participant(setup.credentials.patientID).registeredAt != nil)
            await client.close()
        }
    }

    @Test func anAppHandsOverItsPushesAndItsToken() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            var configuration = clientConfiguration(trio, setup.credentials)
            configuration.pushSource = .external
            let client = try SurveyClient(configuration: configuration)
            let recorder = EventRecorder(client)
            // The app's push service gave a token before the first start: registration carries it, and it reaches the
            // server (a server-scheduled study needs one).
            try await client.updatePushToken("app-token-1")
            try await client.start()
            #expect(try await trio.admin.participant(setup.credentials.patientID).pushToken == "app-token-1")
            // A new token later: sent with /set_fcm_token at once.
            try await client.updatePushToken("app-token-2")
            #expect(try await trio.admin.participant(setup.credentials.patientID).pushToken == "app-token-2")

            // A push the app received: Beiwe's data fields.
            let fields = ["type": "survey", "survey_ids": "[\"\(setup.surveyID)\"]", "sent_time": "2026-05-04T14:00:00",
                          "nonce": "abcdefghijklmnopqrstuvwxyz012345", "survey_uuids_dict": "{\"\(setup.surveyID)\": [\"\(UUID().uuidString.lowercased())\"]}"]
            let stored = try await client.receive(push: fields)
            #expect(stored.map(\.surveyID) == [setup.surveyID])
            // The same push again: a duplicate.
            #expect(try await client.receive(push: fields).isEmpty)
            // (The recorder reads the events stream on its own task: wait for the event rather than look at once.)
            _ = try await recorder.wait(timeout: .seconds(5)) { if case .duplicateIgnored = $0 { true } else { nil } }
            // A push for a survey deleted meanwhile: withdrawn, not an error that comes back.
            let gone = try await trio.admin.createSurvey(study: setup.study.studyID, tenOClockSurvey)
            try await trio.admin.deleteSurvey(gone)
            var late = fields
            late["survey_ids"] = "[\"\(gone)\"]"
            late["nonce"] = "zyxwvutsrqponmlkjihgfedcba543210"
            late["survey_uuids_dict"] = "{\"\(gone)\": [\"\(UUID().uuidString.lowercased())\"]}"
            #expect(try await client.receive(push: late).isEmpty)
            _ = try await recorder.wait(timeout: .seconds(5)) { if case .surveyWithdrawn(let id, _) = $0, id == gone { true } else { nil } }
            // Not a survey push: refused with a code.
            var refused: SurveyClientError?
            do throws(SurveyClientError) { _ = try await client.receive(push: ["type": "fake"]) } catch { refused = error }
            #expect(refused?.kind == .badPush)
            try await client.submit(answers: ["mood": "3"], for: setup.surveyID)
            #expect(try await trio.admin.submissions(study: setup.study.studyID).count == 1)
            await client.close()
        }
    }

    @Test func theDeviceCLIRegistersWithoutARelay() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let dataDir = temporaryDirectory("cli-no-relay")
            let run = runSurveyCLI
            let (registered, _) = try await run(["device", "register", "--data-dir", dataDir.path, "--server", trio.server.url,
                                           "--patient-id", setup.credentials.patientID, "--password", setup.credentials.password,
                                           "--timezone", "America/Chicago"])
            #expect(registered == 0)
            let (status, text) = try await run(["device", "status", "--data-dir", dataDir.path])
            #expect(status == 0)
            let object = try JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))
            #expect(object["registered"] == true && object["scheduling"] == "device")
            // Too long an os_version is refused before anything is sent.
            let (refused, _) = try await run(["device", "register", "--data-dir", temporaryDirectory("cli-os").path, "--server", trio.server.url,
                                        "--patient-id", setup.credentials.patientID, "--password", setup.credentials.password,
                                        "--os-version", "Debian GNU/Linux 12 (bookworm)"])
            #expect(refused != 0)
        }
    }
}
}
