import ClientSDK
import Foundation
import SurveyCrypto
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The Beiwe-compatible mobile API: registration rules, credentials and bad input.
@Suite(.timeLimit(.minutes(2))) struct MobileAPITests {
    @Test func serverStudyRefusesRegistrationWithoutAPushToken() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let old = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                           extra: [("new_password", "x"), ("phone_number", "NOT_SUPPLIED"), ("timezone", "America/Chicago")])
            #expect(old.status == 400)
            #expect(errorCode(old) == "push_token_required")
            let empty = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                             extra: [("new_password", "x"), ("phone_number", "1"), ("fcm_token", "")])
            #expect(errorCode(empty) == "push_token_required")
            // Nothing changed: not registered, the temporary password still works.
            #expect(try await trio.admin.participant(setup.credentials.patientID).registeredAt == nil)
            #expect(try await trio.admin.stats(setup.study.studyID).registered == 0)

            let retry = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                             extra: [("new_password", "x"), ("phone_number", "1"), ("fcm_token", "some-token")])
            #expect(retry.status == 200)
        }
    }

    @Test func deviceStudyRegistersWithoutTokenAndServesTimings() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let response = try await mobilePost(trio, "/register_user/", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                                extra: [("new_password", "pw2"), ("phone_number", "NOT_SUPPLIED"), ("timezone", "Not/AZone")])
            #expect(response.status == 200)
            let body = try response.decode(JSONValue.self)
            #expect(body["scheduling"]?.stringValue == "device")
            #expect(body["timezone"]?.stringValue == "America/New_York")
            #expect(body["client_public_key"]?.stringValue?.hasPrefix("MIIBI") == true)
            #expect(body["ios_plist"] == .null)
            #expect(body["device_settings"]?["check_for_new_surveys_frequency_seconds"] == 3600)
            for key in ["client_public_key", "device_settings", "ios_plist", "android_firebase_json", "study_name", "study_id"] {
                #expect(body[key] != nil, "missing \(key)")
            }
            let participant = try await trio.admin.participant(setup.credentials.patientID)
            #expect(participant.timezoneFallback)
            #expect(participant.timezone == "America/New_York")

            // The new password is in force now; surveys come with Beiwe's timings (index 0 = Sunday).
            let surveys = try await mobilePost(trio, "/download_surveys", patientID: setup.credentials.patientID, password: "pw2")
            #expect(surveys.status == 200)
            let list = try surveys.decode([SurveyEntry].self)
            #expect(list.first?.timings == [[], [32400], [], [], [], [], []])
            let stale = try await mobilePost(trio, "/download_surveys", patientID: setup.credentials.patientID, password: setup.credentials.password)
            #expect(stale.status == 403)
            // A device study never gets survey pushes.
            let advanced = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 3600)
            #expect(advanced.fired.isEmpty)
        }
    }

    /// Concurrent registrations share group commits; one failing inside a batch (its push token belongs to someone
    /// else) rolls back only itself.
    @Test func concurrentRegistrationsCommitTogetherAndFailIndependently() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let people = try await trio.admin.createParticipants(study: setup.study.studyID, .init(count: 40))
            let holder = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: setup.credentials.password,
                                              extra: [("new_password", "p"), ("phone_number", "1"), ("fcm_token", "taken")])
            #expect(holder.status == 200)
            // Every third participant asks for the taken token.
            let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for (i, who) in people.enumerated() {
                    group.addTask {
                        let response = try await mobilePost(trio, "/register_user", patientID: who.patientID, password: who.password,
                                                            extra: [("new_password", "n\(i)"), ("phone_number", "1"),
                                                                    ("fcm_token", i % 3 == 0 ? "taken" : "token-\(i)")])
                        return (i, response.status)
                    }
                }
                var out: [Int: Int] = [:]
                for try await (i, status) in group { out[i] = status }
                return out
            }
            for (i, who) in people.enumerated() {
                let participant = try await trio.admin.participant(who.patientID)
                if i % 3 == 0 {
                    #expect(statuses[i] == 400)
                    #expect(participant.registeredAt == nil)
                } else {
                    #expect(statuses[i] == 200)
                    #expect(participant.pushToken == "token-\(i)")
                }
            }
            #expect(try await trio.admin.stats(setup.study.studyID).registered == 1 + people.count - (people.count + 2) / 3)
            #expect(try await trio.admin.participant(setup.credentials.patientID).pushToken == "taken")
            // Batching shows in the server's counters: every write committed, in no more transactions than writes.
            let metrics = try await trio.http.send(TransportRequest(url: trio.server.url + "/metrics")).text
            func counter(_ name: String) -> Int? {
                metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
            }
            if try await trio.admin.info().store == "postgres" {
                // One transaction per write; PostgreSQL groups the WAL flushes of concurrent commits itself.
                // (At least the registrations that succeeded; a refused one rolled back and counts nothing.)
                #expect(try #require(counter("postgres_writes_total")) >= people.count - (people.count + 2) / 3)
            } else {
                let writes = try #require(counter("sqlite_writes_total")), commits = try #require(counter("sqlite_commits_total"))
                #expect(commits >= 1 && commits <= writes)
            }
        }
    }

    @Test func wrongPasswordIs403AndOnIOS401() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let fields = [("new_password", "x"), ("phone_number", "1"), ("fcm_token", "tok")]
            let android = try await mobilePost(trio, "/register_user", patientID: setup.credentials.patientID, password: "wrong", extra: fields)
            #expect(android.status == 403)
            #expect(errorCode(android) == "invalid_credentials")
            let ios = try await mobilePost(trio, "/register_user/ios", patientID: setup.credentials.patientID, password: "wrong", extra: fields)
            #expect(ios.status == 401)
            let iosSlash = try await mobilePost(trio, "/register_user/ios/", patientID: setup.credentials.patientID, password: "wrong", extra: fields)
            #expect(iosSlash.status == 401)
            let unknown = try await mobilePost(trio, "/download_surveys/ios", patientID: "nobody", password: "x")
            #expect(unknown.status == 401)
            let missing = try await mobilePost(trio, "/download_surveys", patientID: setup.credentials.patientID, password: nil)
            #expect(missing.status == 400)
            #expect(errorCode(missing) == "missing_field")
            #expect(try await trio.admin.participant(setup.credentials.patientID).registeredAt == nil)
        }
    }

    /// Registration checks the credentials before `new_password` (its check and the new record are computed
    /// together): a wrong password is refused as such whether `new_password` is sent, empty or absent; with the right
    /// one, an absent or empty `new_password` is the missing field, and nothing is stored.
    @Test func registrationChecksCredentialsBeforeTheNewPassword() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let id = setup.credentials.patientID
            for newPassword in [nil, "", "x"] as [String?] {
                let extra = [("phone_number", "1"), ("fcm_token", "tok")] + (newPassword.map { [("new_password", $0)] } ?? [])
                let wrong = try await mobilePost(trio, "/register_user", patientID: id, password: "wrong", extra: extra)
                #expect(wrong.status == 403, "new_password \(String(describing: newPassword))")
                #expect(errorCode(wrong) == "invalid_credentials")
                let unknown = try await mobilePost(trio, "/register_user", patientID: "nobody", password: "x", extra: extra)
                #expect(unknown.status == 403)
                guard newPassword != "x" else { continue }
                let right = try await mobilePost(trio, "/register_user", patientID: id, password: setup.credentials.password, extra: extra)
                #expect(right.status == 400, "new_password \(String(describing: newPassword))")
                #expect(errorCode(right) == "missing_field")
            }
            #expect(try await trio.admin.participant(id).registeredAt == nil)
        }
    }

    @Test func badInputGetsClearErrorsAndChangesNothing() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            let password = "new-" + setup.credentials.password
            let id = setup.credentials.patientID
            let before = try await trio.admin.stats(setup.study.studyID)

            // Over the 1 MiB body limit.
            let huge = try await mobilePost(trio, "/mobile-heartbeat", patientID: id, password: password,
                                            extra: [("message", String(repeating: "x", count: 1_100_000))])
            #expect(huge.status == 413)
            // Unknown survey.
            let unknown = try await mobilePost(trio, "/download_survey", patientID: id, password: password, extra: [("survey_id", "ffffffffffffffffffffffff")])
            #expect(unknown.status == 404)
            #expect(errorCode(unknown) == "survey_not_found")
            #expect(try await mobilePost(trio, "/download_survey", patientID: id, password: password).status == 400)
            // A corrupt upload: Beiwe's 200 telling the device to delete the file; nothing stored.
            let corrupt = try await mobilePost(trio, "/upload", patientID: id, password: password,
                                               extra: [("file_name", "\(id)_surveyAnswers_\(setup.surveyID)_1.csv"), ("file", "garbage\nmore")])
            #expect(corrupt.status == 200)
            #expect(corrupt.text.hasPrefix("file was bad"))
            let noFile = try await mobilePost(trio, "/upload", patientID: id, password: password, extra: [("file_name", "\(id)_gps_1.csv")])
            #expect(noFile.status == 400)
            let badName = try await mobilePost(trio, "/upload", patientID: id, password: password, extra: [("file_name", "x.exe"), ("file", "a")])
            #expect(badName.text == "file obviously invalid.")
            // Empty token.
            #expect(try await mobilePost(trio, "/set_fcm_token", patientID: id, password: password, extra: [("fcm_token", "")]).status == 400)
            // Telemetry: not JSON, wrong shape, too large.
            let notJSON = TransportRequest(method: "POST", url: trio.server.url + "/submit/app/events/1/doc-1", body: Array("{".utf8))
            #expect(try await trio.http.send(notJSON).status == 400)
            let wrongShape = try TransportRequest.json(trio.server.url + "/submit/app/events/1/doc-2", body: ["ping_info": 1])
            #expect(try await trio.http.send(wrongShape).status == 400)
            var bomb = TransportRequest(method: "POST", url: trio.server.url + "/submit/app/events/1/doc-3",
                                   headers: [("Content-Encoding", "gzip")], body: Gzip.compress([UInt8](repeating: 32, count: 2 << 20)))
            bomb.timeout = .seconds(10)
            #expect(try await trio.http.send(bomb).status == 413)
            // Admin: malformed JSON, unknown fields, bad schedule, unknown study.
            let malformed = TransportRequest(method: "POST", url: trio.server.url + "/__admin/studies", headers: [("Content-Type", "application/json")], body: Array("{\"name\":".utf8))
            let r1 = try await trio.http.send(malformed)
            #expect(r1.status == 400)
            #expect(errorCode(r1) == "invalid_json")
            let badZone = try await trio.http.send(.json(trio.server.url + "/__admin/studies", body: ["name": "x", "scheduling": "server", "timezone": "Mars/Base"]))
            #expect(errorCode(badZone) == "invalid_timezone")
            let badSchedule = try await trio.http.send(.json(trio.server.url + "/__admin/studies/\(setup.study.studyID)/surveys", body: JSONValue.object([
                "name": "x", "survey_type": "tracking_survey", "content": [],
                "schedules": [["type": "weekly", "day_of_week": 1, "hour": 25, "minute": 0]]])))
            #expect(badSchedule.status == 400)
            #expect((try? badSchedule.decode(ErrorBody.self))?.error.field == "hour")
            let noStudy = try await trio.http.send(TransportRequest(url: trio.server.url + "/__admin/studies/000000000000000000000000"))
            #expect(noStudy.status == 404)
            let badClock = try await trio.http.send(.json(trio.server.url + "/__admin/studies/\(setup.study.studyID)/clock", body: ["advance_seconds": -5]))
            #expect(badClock.status == 400)

            #expect(try await trio.admin.stats(setup.study.studyID) == before)
            // None of the bad pings was stored (the client's own session pings were).
            #expect(try await trio.admin.telemetry().filter { $0.documentID.hasPrefix("doc-") }.isEmpty)
            await client.close()
        }
    }

    @Test func registrationAnswerIsValidJSONWhateverTheStudyName() async throws {
        try await Trio.with { trio in
            let name = "Quote \"study\" \\ tab\t ünï\u{1}"
            let study = try await trio.admin.createStudy(.init(name: name, scheduling: "device", deviceSettings: ["gps": false]))
            let who = try await trio.admin.createParticipants(study: study.studyID)[0]
            let response = try await mobilePost(trio, "/register_user", patientID: who.patientID, password: who.password,
                                                extra: [("new_password", "pw"), ("phone_number", "1"), ("timezone", "Europe/Berlin")])
            #expect(response.status == 200)
            let body = try response.decode(JSONValue.self)
            #expect(body["study_name"]?.stringValue == name)
            #expect(body["timezone"]?.stringValue == "Europe/Berlin")
            #expect(body["device_settings"]?["gps"] == false)
            #expect(body["device_settings"]?["accelerometer"] == true)
            #expect(body["android_firebase_json"] == .null)
        }
    }

    @Test func duplicateFormKeysKeepTheLastValue() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            // Android writes some keys twice and does not escape values.
            let body = "patient_id=\(setup.credentials.patientID)&password=\(BeiwePassword.deviceHash(setup.credentials.password))&device_id=first"
                + "&new_password=pw&phone_number=1&device_id=second&timezone=Asia/Kathmandu"
            let response = try await trio.http.send(.form(trio.server.url + "/register_user", body))
            #expect(response.status == 200)
            let participant = try await trio.admin.participant(setup.credentials.patientID)
            #expect(participant.deviceID == "second")
            #expect(participant.timezone == "Asia/Kathmandu")
        }
    }
}
}
