import ClientSDK
import Foundation
import Synchronization
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The SDK against `mock-server --profile beiwe`, which answers as the real Beiwe server does (issue 14): it must
/// register, download, fire surveys locally, answer and upload with no workaround, get its push token to the server,
/// and keep its pings when the server has no telemetry route.
@Suite(.timeLimit(.minutes(2))) struct BeiweProfileTests {
    /// The device's clock, moved by the test.
    final class DeviceClock: Sendable {
        let value: Mutex<Date>
        init(_ date: Date) { value = Mutex(date) }
        func now() -> Date { value.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    @Test func theSDKRegistersDownloadsAnswersAndUploadsAgainstTheRealServersAnswers() async throws {
        try await Trio.with(Trio.Options(serverArguments: ["--profile", "beiwe"])) { trio in
            // What a real Beiwe study is: old-style, the device schedules from `timings`.
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let clock = DeviceClock(WireTime.parse(mondayBeforeNineChicago)!)
            var configuration = clientConfiguration(trio, setup.credentials)
            // A real deployment: no telemetry or features route on the study server.
            configuration.telemetryURL = nil
            configuration.featuresURL = nil
            let client = try SurveyClient(configuration: configuration, now: { clock.now() })
            let recorder = EventRecorder(client)
            try await client.start()
            // No `scheduling` key in the answer: device scheduling.
            let (scheduling, _) = try await recorder.wait { if case .registered(_, let s, _) = $0 { s } else { nil } }
            #expect(scheduling == "device")
            // The token reached the server through /set_fcm_token (Beiwe ignores it at registration).
            let token = try #require(await client.pushToken)
            #expect(try await trio.admin.participant(setup.credentials.patientID).pushToken == token)
            // Monday 09:00 Chicago passes on the device: the survey fires locally from `timings`.
            clock.advance(120)
            let fired = try await client.runLocalSchedule()
            #expect(fired.map(\.surveyID) == [setup.surveyID])
            try await client.submit(answers: ["mood": "6", "sleep": "Yes"], for: setup.surveyID)
            let submissions = try await trio.admin.submissions(study: setup.study.studyID)
            #expect(submissions.count == 1 && submissions.first?.answers.first { $0.questionID == "mood" }?.answer == "6")
            // Telemetry: recorded and kept (the server has no route for it), never sent, never deleted.
            _ = try await client.flushTelemetry()
            let status = await client.status()
            #expect(status.pingsWaiting > 0)
            #expect(status.pingsDropped.isEmpty)
            #expect(try await trio.admin.telemetry().isEmpty)
            await client.close()
        }
    }

    /// A push of a server-scheduled study under `--profile beiwe` goes out as Beiwe's push task sends it (FCM v1 with a
    /// service-account token, which the relay checks under `--provider-auth strict`; Android's fields in `android.data`,
    /// iOS's in `data` with a notification) and becomes an answered survey on both platforms: the device finds no
    /// `/download_survey` (Beiwe's 404 page), takes the survey from `/download_surveys` without asking the missing route
    /// again, and its receipt reaches the server on a heartbeat (Beiwe has no `/confirm_notifications`).
    @Test(arguments: [SurveyClientConfiguration.Platform.android, .ios])
    func aBeiwePushBecomesAnAnsweredSurvey(platform: SurveyClientConfiguration.Platform) async throws {
        try await Trio.with(Trio.Options(serverArguments: ["--profile", "beiwe"], relayArguments: ["--provider-auth", "strict"])) { trio in
            let setup = try await StudySetup.make(trio, scheduling: "server")
            var configuration = clientConfiguration(trio, setup.credentials, platform: platform)
            configuration.telemetryURL = nil
            configuration.featuresURL = nil
            let client = try SurveyClient(configuration: configuration)
            let recorder = EventRecorder(client)
            try await client.start()
            let token = try #require(await client.pushToken)
            // Two pushes (two Mondays at 09:00): the second finds the route already known to be missing.
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            let (first, after) = try await recorder.survey()
            #expect(first.surveyID == setup.surveyID)
            #expect(try storedSpec(configuration.storageDirectory, first.surveyID)?["timings"] == nil)
            try await client.submit(answers: ["mood": "4"], for: first.surveyID)
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 7 * 86_400)
            let (second, _) = try await recorder.survey(from: after)
            try await client.submit(answers: ["mood": "5"], for: second.surveyID)
            let answers = try await trio.admin.submissions(study: setup.study.studyID).compactMap { $0.answers.first { $0.questionID == "mood" }?.answer }
            #expect(answers.sorted() == ["4", "5"])
            let pushes = try await trio.admin.pushes(study: setup.study.studyID)
            #expect(pushes.count == 2 && pushes.allSatisfy { $0.status == "sent" })
            // What the relay took: FCM v1, as Beiwe's task shapes it per platform.
            let trace = try await trio.control.trace(token: token)
            #expect(trace.filter { $0["event"]?.stringValue == "acked" }.count == 2)
            // `/download_survey` was asked once (404 page); `/download_surveys` served both pushes.
            let journal = try await trio.admin.requests()
            let perSurvey = journal.filter { $0.path.hasPrefix("/download_survey") && !$0.path.hasPrefix("/download_surveys") }
            #expect(perSurvey.count == 1 && perSurvey.first?.status == 404)
            #expect(journal.filter { $0.path.hasPrefix("/download_surveys") }.count >= 2)
            #expect(journal.filter { $0.path.hasPrefix("/confirm_notifications") }.count <= 1)
            // Both occurrences confirmed through `notification_uuids` on other requests.
            #expect(try await eventually {
                try await trio.admin.pushes(study: setup.study.studyID).allSatisfy { !($0.confirmedUUIDs ?? []).isEmpty }
            })
            await client.close()
        }
    }

    /// What the profile answers where the real server fails, against the strict profile's helpful refusals.
    @Test func theProfilesDifferWhereTheRealServerFails() async throws {
        let longOS = "Debian GNU/Linux 12 (bookworm)"
        for profile in ["strict", "beiwe"] {
            try await Trio.with(Trio.Options(serverArguments: ["--profile", profile])) { trio in
                let setup = try await StudySetup.make(trio, scheduling: "device")
                let who = setup.credentials
                func register(os: String) async throws -> TransportResponse {
                    try await mobilePost(trio, "/register_user", patientID: who.patientID, password: who.password, extra: [
                        ("new_password", who.password), ("phone_number", "1"), ("fcm_token", "t-1"), ("os_version", os)])
                }
                let tooLong = try await register(os: longOS)
                let denied = try await mobilePost(trio, "/mobile-heartbeat", patientID: who.patientID, password: "wrong")
                let features = try await trio.http.send(TransportRequest(url: trio.server.url + "/features/app?client_id=c"))
                if profile == "strict" {
                    #expect(tooLong.status == 400 && errorCode(tooLong) == "field_too_long")
                    #expect(denied.status == 403 && errorCode(denied) == "invalid_credentials")
                    #expect(features.status == 200)
                } else {
                    #expect(tooLong.status == 500 && tooLong.header("Content-Type")?.hasPrefix("text/html") == true)
                    #expect(denied.status == 403 && denied.body.isEmpty)
                    #expect(features.status == 404 && features.text.contains("Page not found"))
                }
                let registered = try await register(os: "12")
                #expect(registered.status == 200)
                let body = try registered.decode([String: JSONValue].self)
                if profile == "beiwe" {
                    #expect(body["scheduling"] == nil && body["timezone"] == nil)
                    #expect(registered.header("Content-Type") == "text/html; charset=utf-8")
                    // fcm_token at registration is ignored.
                    #expect(try await trio.admin.participant(who.patientID).pushToken == nil)
                    // The same participant twice within one wall-clock second: Beiwe's identifiers file collides (500).
                    // Two registrations take a few ms; three tries make a pair that straddles a second boundary moot.
                    var collided = false
                    for _ in 0..<3 where !collided {
                        _ = try await register(os: "12")
                        collided = try await register(os: "12").status == 500
                    }
                    #expect(collided)
                } else {
                    #expect(body["scheduling"] == "device")
                    #expect(try await trio.admin.participant(who.patientID).pushToken == "t-1")
                }
            }
        }
    }
}
}
