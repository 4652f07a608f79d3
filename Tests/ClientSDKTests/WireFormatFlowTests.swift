import Foundation
import SurveyCrypto
import SurveyWire
import Testing
@testable import ClientSDK

/// What the device puts on the wire, as Beiwe's apps do, checked on every request ``MemoryStudy`` saw: the credentials
/// each mobile request carries, the iOS app's routes and multipart upload, and the answers file.
@Suite struct WireFormatFlowTests {
    typealias Flow = InMemoryFlowTests

    static func configuration(platform: SurveyClientConfiguration.Platform = .android, newPassword: String? = nil) -> SurveyClientConfiguration {
        MemoryStudy.configuration {
            $0.newPassword = newPassword
            $0.platform = platform
            $0.heartbeatInterval = .milliseconds(100)
        }
    }

    /// The study server's mobile requests (not the relay's, not telemetry).
    static func mobile(_ study: MemoryStudy) -> [MemoryStudy.Seen] {
        study.seen.filter { !$0.path.hasPrefix("/v1/") && !$0.path.hasPrefix("/submit/") && !$0.path.hasPrefix("/features/") }
    }

    /// Answers to `s1` uploaded by a running client of `study` (push, fetch, answer).
    static func answerOnce(_ study: MemoryStudy, _ client: SurveyClient, _ tap: Flow.EventTap) async throws {
        #expect(await study.until { study.openStreams == ["tok-1"] })
        study.push(to: "tok-1", id: "m1", surveys: ["s1": ["u1"]])
        #expect(await study.until { tap.count(Flow.isAvailable) == 1 })
        try await client.submit(answers: ["q1": "6"], for: "s1")
    }

    @Test func everyMobileRequestCarriesTheCredentialsAndDeviceFields() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try SurveyClient(configuration: Self.configuration(newPassword: "chosen"), transport: study)
        let tap = Flow.EventTap(client)
        try await client.start()
        try await Self.answerOnce(study, client, tap)
        #expect(await study.until { study.seen("/mobile-heartbeat").count >= 2 })
        await client.close()
        let requests = Self.mobile(study)
        #expect(Set(requests.map(\.path)).isSuperset(of: ["/register_user", "/set_fcm_token", "/download_survey", "/upload", "/mobile-heartbeat"]))
        let deviceID = requests.first?.form["device_id"]
        for request in requests {
            #expect(request.form["patient_id"] == "p1", "\(request.path)")
            #expect(request.form["device_id"] == deviceID && deviceID?.isEmpty == false, "\(request.path)")
            #expect(request.form["timezone"] == "America/Chicago" && request.form["os_version"] == "14", "\(request.path)")
            #expect(request.form["version_name"] == SurveyClient.sdkVersion, "\(request.path)")
            // Registration proves the temporary password and sets the new one; every later request carries the new one,
            // as Beiwe's device hash (never the plaintext).
            let password = request.path == "/register_user" ? "temp" : "chosen"
            #expect(request.form["password"] == BeiwePassword.deviceHash(password), "\(request.path)")
        }
        let registration = try #require(study.seen("/register_user").first)
        #expect(registration.form["new_password"] == "chosen" && registration.form["device_os"] == "Android")
        #expect(registration.form["phone_number"] == "NOT_SUPPLIED" && registration.form["beiwe_version"] == SurveyClient.sdkVersion)
    }

    @Test func anIOSDeviceUsesTheIOSRoutesAndAMultipartUpload() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try SurveyClient(configuration: Self.configuration(platform: .ios), transport: study)
        let tap = Flow.EventTap(client)
        try await client.start()
        try await Self.answerOnce(study, client, tap)
        await client.close()
        #expect(study.seen("/register_user").first?.sentPath == "/register_user/ios")
        #expect(study.seen("/register_user").first?.form["device_os"] == "iOS")
        // Beiwe has no iOS variant of /set_fcm_token.
        #expect(study.seen("/set_fcm_token").first?.sentPath == "/set_fcm_token")
        #expect(study.seen("/download_survey").first?.sentPath == "/download_survey/ios")
        let upload = try #require(study.seen("/upload").first)
        #expect(upload.sentPath == "/upload/ios")
        #expect(upload.headers.contains { $0.name == "Content-Type" && $0.value.hasPrefix("multipart/form-data; boundary=") })
        #expect(upload.fileName == upload.form["file_name"] && upload.fileName != nil)
        #expect(try study.uploadedAnswers() == [["q1": "6"]])
    }

    @Test func theAnswersFileIsBeiwesEncryptedCSVNamedAsBeiweNamesIt() async throws {
        let study = MemoryStudy()
        study.addSurvey("s1")
        let client = try SurveyClient(configuration: Self.configuration(), transport: study)
        let tap = Flow.EventTap(client)
        try await client.start()
        try await Self.answerOnce(study, client, tap)
        await client.close()
        let upload = try #require(study.seen("/upload").first)
        let name = try #require(upload.form["file_name"])
        #expect(name.hasPrefix("p1_surveyAnswers_s1_") && name.hasSuffix(".csv"))
        #expect(Int64(name.dropFirst("p1_surveyAnswers_s1_".count).dropLast(4)).map { $0 > 1_700_000_000_000 } == true)
        let lines = try BeiweFile.decrypt(upload.form["file"] ?? "", privateKey: study.key).lines
        #expect(lines.first == SurveyAnswersCSV.header)
        let answers = try SurveyAnswersCSV.parse(lines: lines)
        #expect(answers == [SurveyAnswer(questionID: "q1", questionType: "slider", questionText: "How are you?", answerOptions: "0 - 10", answer: "6")])
    }

    @Test func againstBeiweTheStudyIsDeviceScheduledInTheServersZone() async throws {
        let study = MemoryStudy(beiweOnly: true)
        let client = try SurveyClient(configuration: Self.configuration(), transport: study)
        let tap = Flow.EventTap(client)
        try await client.start()
        // Beiwe answers no `scheduling`: an old-style study, which the device schedules itself.
        #expect(await study.until { tap.count { if case .registered(_, "device", "America/Chicago") = $0 { true } else { false } } == 1 })
        #expect(await client.status().scheduling == "device")
        #expect(study.seen("/download_surveys").count == 1)
        await client.close()
    }
}
