import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The whole participant flow across the three real processes.
@Suite(.timeLimit(.minutes(2))) struct FullFlowTests {
    @Test func chicagoMondaySurveyGoesFromScheduleToDecryptedAnswers() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let storage = temporaryDirectory()
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            let recorder = EventRecorder(client)
            try await client.start()
            let (zone, _) = try await recorder.wait { if case .registered(_, _, let zone) = $0 { zone } else { nil } }
            #expect(zone == "America/Chicago")
            let participant = try await trio.admin.participant(setup.credentials.patientID)
            #expect(participant.timezone == "America/Chicago")
            #expect(participant.pushToken == (await client.pushToken))
            #expect(participant.os == "android")

            // Nothing is due at 08:59; advancing two minutes crosses Monday 09:00 local.
            let pending = try await trio.admin.occurrences(study: setup.study.studyID)
            #expect(pending.first?.localTime == "2026-05-04T09:00")
            #expect(pending.first?.dueAt == "2026-05-04T14:00:00Z")
            let advanced = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            #expect(advanced.now == "2026-05-04T14:01:00Z")
            #expect(advanced.fired.count == 1)
            let push = try #require(advanced.fired.first)
            #expect(push.status == "sent")
            #expect(push.relayStatus == 200)
            #expect(push.surveyIDs == [setup.surveyID])
            #expect(push.scheduleUUIDs == [pending[0].uuid])

            // The push reaches the device, which fetches and stores the spec.
            let (stored, _) = try await recorder.survey()
            #expect(stored.surveyID == setup.surveyID)
            #expect(stored.scheduleUUIDs == [pending[0].uuid])
            #expect(stored.questions.count == 4)
            #expect(try storedSpec(storage, stored.surveyID)?["timings"] == nil)
            #expect(await client.pendingSurveys().map(\.surveyID) == [setup.surveyID])
            let token = try #require(await client.pushToken)
            #expect(try await eventually { try await trio.control.device(token).acked == 1 })
            // The device confirms the receipt (`notification_uuids`); the push log shows it.
            #expect(try await eventually {
                try await trio.admin.pushes(study: setup.study.studyID).first?.confirmedUUIDs == [pending[0].uuid]
            })
            #expect(try await eventually { await client.status().receiptsWaiting == 0 })

            // Answers are encrypted, uploaded, decrypted by the server; the stored survey is gone.
            try await client.submit(answers: ["mood": "7", "sleep": "Yes", "note": "slept, mostly"], for: setup.surveyID)
            #expect(await client.pendingSurveys().isEmpty)
            let files = try FileManager.default.contentsOfDirectory(atPath: storage.appendingPathComponent("surveys").path)
            #expect(files.isEmpty)
            let submissions = try await trio.admin.submissions(study: setup.study.studyID)
            #expect(submissions.count == 1)
            let answers = try #require(submissions.first?.answers)
            #expect(answers.map(\.questionID) == ["mood", "sleep", "note"])
            #expect(answers.map(\.answer) == ["7", "Yes", "slept, mostly"])
            #expect(answers[1].answerOptions == "[Yes; No]")
            #expect(answers[1].questionText == "Slept well?")

            // One telemetry ping, stored once even when the same document is sent twice.
            let documentID = try #require(try await client.flushTelemetry())
            let clientID = await client.clientID
            let pings = try await trio.admin.telemetry(clientID: clientID, ping: "events")
            #expect(pings.count == 1)
            let ping = try #require(pings.first)
            #expect(ping.documentID == documentID)
            let events = ping.body["events"]?.arrayValue ?? []
            let names = events.filter { $0["category"]?.stringValue != "mma" }.compactMap { $0["name"]?.stringValue }
            #expect(names == ["registered", "push_received", "submitted"])
            // The MMA session start and launch events ride in the same ping.
            let mma = events.filter { $0["category"]?.stringValue == "mma" }
            #expect(mma.compactMap { $0["name"]?.stringValue } == ["start", "track", "track"])
            #expect(mma.compactMap { $0["extra"]?["event"]?.stringValue } == ["E_First_Run", "E_Opened_App"])
            let resend = TransportRequest(method: "POST", url: "\(trio.server.url)/submit/survey-sdk/events/1/\(documentID)",
                                     headers: [("Content-Type", "application/json")], body: Array(try WireJSON.encode(ping.body)))
            #expect(try await trio.http.send(resend).status == 200)
            #expect(try await trio.admin.telemetry(clientID: clientID, ping: "events").count == 1)
            // The session's baseline ping (`active`) went at start.
            #expect(try await trio.admin.telemetry(clientID: clientID, ping: "baseline").compactMap { $0.body["ping_info"]?["reason"]?.stringValue } == ["active"])

            let stats = try await trio.admin.stats(setup.study.studyID)
            #expect(stats.pushesSent == 1)
            #expect(stats.submissions == 1)
            #expect(stats.registered == 1)
            await client.close()
        }
    }

    @Test func iosDeviceUsesAPNsAndMultipartUploads() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, platform: .ios))
            let recorder = EventRecorder(client)
            try await client.start()
            let token = try #require(await client.pushToken)
            #expect(token.count == 64)
            #expect(try await trio.admin.participant(setup.credentials.patientID).os == "ios")
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            let (stored, _) = try await recorder.survey()
            try await client.submit(answers: ["mood": "3"], for: stored.surveyID)
            let answers = try await trio.admin.submissions(study: setup.study.studyID).first?.answers ?? []
            #expect(answers.first { $0.questionID == "mood" }?.answer == "3")
            // The relay saw the device acknowledge the APNs push.
            let trace = try await trio.control.trace(token: token)
            #expect(trace.contains { $0["event"]?.stringValue == "acked" })
            await client.close()
        }
    }

    @Test func duplicatePushIsAckedAndIgnored() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, platform: .ios))
            let recorder = EventRecorder(client)
            try await client.start()
            let token = try #require(await client.pushToken)
            let payload: JSONValue = .object(SurveyPush(surveyIDs: [setup.surveyID], sentTime: "2026-05-04T14:00:00",
                                                        nonce: String(repeating: "n", count: 32), surveyUUIDs: [setup.surveyID: ["u-1"]])
                .dataFields().mapValues { .string($0) }.merging(["aps": ["content-available": 1]]) { a, _ in a })
            let silent = [("apns-push-type", "background"), ("apns-priority", "5")]
            #expect(try await trio.control.sendAPNs(token: token, payload: payload, headers: silent).status == 200)
            let (_, after) = try await recorder.survey()
            #expect(try await trio.control.sendAPNs(token: token, payload: payload, headers: silent).status == 200)
            try await recorder.wait(from: after) { if case .duplicateIgnored = $0 { true } else { nil } }
            #expect(try await eventually { try await trio.control.device(token).acked == 2 })
            #expect(await client.pendingSurveys().count == 1)
            await client.close()
        }
    }

    @Test func storedSurveysSurviveARestartOfTheDevice() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let storage = temporaryDirectory()
            let first = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            let recorder = EventRecorder(first)
            try await first.start()
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            _ = try await recorder.survey()
            let token = await first.pushToken
            await first.close()

            // A new process on the same storage: same token, still registered, the survey still waiting.
            let second = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            #expect(await second.pushToken == token)
            #expect(await second.isRegistered)
            #expect(await second.pendingSurveys().map(\.surveyID) == [setup.surveyID])
            try await second.start()
            try await second.submit(answers: ["mood": "5"], for: setup.surveyID)
            #expect(try await trio.admin.submissions(study: setup.study.studyID).count == 1)
            await second.close()
        }
    }
}
}
