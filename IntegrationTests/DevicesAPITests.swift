import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// Devices over HTTP (PROTOCOL.md §8, issue 35): `survey-cli devices serve` hosts the devices of a test in one process;
/// the test creates, reads, waits on and answers them with HTTP alone, as a suite in any language would.
@Suite(.timeLimit(.minutes(2))) struct DevicesAPITests {
    /// Starts `survey-cli devices serve` against the trio, tied to this process.
    static func serve(_ trio: Trio) async throws -> ServerProcess {
        let directory = temporaryDirectory("devices")
        return try await ServerProcess.launch(
            executable: try Executables.locate("survey-cli"),
            arguments: ["devices", "serve", "--server", trio.server.url, "--relay", trio.relay.url, "--data-dir", directory.path,
                        "--parent-pid", String(getpid())],
            logFile: directory.appendingPathComponent("serve.log"))
    }

    static func call(_ trio: Trio, _ method: String, _ url: String, _ body: JSONValue? = nil) async throws -> (Int, JSONValue) {
        var request = TransportRequest(method: method, url: url)
        if let body {
            request = try TransportRequest.json(url, method: method, body: body)
        }
        request.timeout = .seconds(70)
        let response = try await trio.http.send(request)
        return (response.status, response.body.isEmpty ? .null : try response.decode(JSONValue.self))
    }

    @Test func aSuiteDrivesDevicesOverHTTP() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let other = try await trio.admin.createParticipants(study: setup.study.studyID)[0]
            let devices = try await Self.serve(trio)
            let base = devices.url + "/__devices"
            #expect(devices.ready.service == "survey-devices")
            // An Android device answered by the test, an iOS one that answers by itself.
            let (created, device) = try await Self.call(trio, "POST", base, [
                "patient_id": .string(setup.credentials.patientID), "password": .string(setup.credentials.password),
                "timezone": "America/Chicago"])
            #expect(created == 201, "\(device)")
            #expect(device["registered"] == true && device["state"] == "running" && device["platform"] == "android")
            let id = try #require(device["device_id"]?.stringValue)
            let (_, auto) = try await Self.call(trio, "POST", base, [
                "patient_id": .string(other.patientID), "password": .string(other.password), "timezone": "America/Chicago",
                "platform": "ios", "auto_answer": true, "answer_value": "9"])
            let autoID = try #require(auto["device_id"]?.stringValue)
            let (_, listed) = try await Self.call(trio, "GET", base)
            #expect(listed.arrayValue?.compactMap { $0["device_id"]?.stringValue } == [id, autoID])

            // Waiting on events, not sleeping: the push, then the survey.
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            let (_, page) = try await Self.call(trio, "GET", base + "/\(id)/events?after=0&until=survey_available&wait=20s")
            let events = page["events"]?.arrayValue ?? []
            #expect(events.last?["event"] == "survey_available", "\(events)")
            // The survey's questions come with it, in Beiwe's key names: what to answer, and how.
            let questions = events.last?["questions"]?.arrayValue ?? []
            #expect(questions.compactMap { $0["question_id"]?.stringValue } == ["intro", "mood", "sleep", "note"])
            #expect(questions.compactMap { $0["question_type"]?.stringValue } == ["info_text_box", "slider", "radio_button", "free_response"])
            #expect(questions[safe: 1]?["min"] == "0" && questions[safe: 1]?["max"] == "10")
            #expect(questions[safe: 2]?["options"] == ["Yes", "No"] && questions[safe: 2]?["required"] == false)
            #expect(questions[safe: 3]?["text_field_type"] == "SINGLE_LINE_TEXT" && questions[safe: 3]?["options"] == nil)
            #expect(events.first?["event"] == "registered" && events.first?["seq"] == 1)
            let next = try #require(page["next"]?.numberValue.map { Int($0) })
            #expect(next == events.count)
            let (answered, answer) = try await Self.call(trio, "POST", base + "/\(id)/answers", [
                "survey_id": .string(setup.surveyID), "answers": ["mood": "4", "sleep": "Yes"]])
            #expect(answered == 200 && answer["status"] == "uploaded", "\(answer)")
            let (_, after) = try await Self.call(trio, "GET", base + "/\(id)/events?after=\(next)&until=submitted&wait=10s")
            #expect(after["events"]?.arrayValue?.last?["event"] == "submitted")
            // The iOS device answered by itself.
            let (_, autoPage) = try await Self.call(trio, "GET", base + "/\(autoID)/events?until=submitted&wait=20s")
            #expect(autoPage["events"]?.arrayValue?.last?["event"] == "submitted")
            let answers = try await trio.admin.submissions(study: setup.study.studyID, wait: ListingWait(minCount: 2))
                .compactMap { $0.answers.first { $0.questionID == "mood" }?.answer }
            #expect(answers.sorted() == ["4", "9"])
            // A wait that ends with what there is.
            let started = ContinuousClock.now
            let (_, quiet) = try await Self.call(trio, "GET", base + "/\(id)/events?after=1000&wait=300ms")
            #expect(quiet["events"]?.arrayValue?.isEmpty == true && quiet["next"] == 1000)
            #expect(ContinuousClock.now - started >= .milliseconds(300))

            // Stop, read while stopped, start again, delete.
            let (_, stopped) = try await Self.call(trio, "POST", base + "/\(id)/stop")
            #expect(stopped["state"] == "stopped" && stopped["registered"] == true)
            let (_, read) = try await Self.call(trio, "GET", base + "/\(id)")
            #expect(read["state"] == "stopped" && read["pending_surveys"] == [])
            let (_, restarted) = try await Self.call(trio, "POST", base + "/\(id)/start")
            #expect(restarted["state"] == "running")
            let (deleted, _) = try await Self.call(trio, "DELETE", base + "/\(id)")
            #expect(deleted == 204)
            let (gone, missing) = try await Self.call(trio, "GET", base + "/\(id)")
            #expect(gone == 404 && missing["error"]?["code"] == "device_not_found")

            // Refusals with stable codes.
            let (wrong, denied) = try await Self.call(trio, "POST", base, [
                "patient_id": .string(setup.credentials.patientID), "password": "wrong", "timezone": "UTC"])
            #expect(wrong == 403 && denied["error"]?["code"] == "invalid_credentials", "\(denied)")
            let (badZone, zone) = try await Self.call(trio, "POST", base, ["patient_id": "p", "password": "x", "timezone": "Mars/Olympus"])
            #expect(badZone == 400 && zone["error"]?["code"] == "invalid_field")
            let (unknown, extra) = try await Self.call(trio, "POST", base, ["patient_id": "p", "password": "x", "timezone": "UTC", "colour": "red"])
            #expect(unknown == 400, "\(extra)")
            let (badUntil, _) = try await Self.call(trio, "GET", base + "/\(autoID)/events?until=never")
            #expect(badUntil == 400)
            _ = await devices.stop()
        }
    }
}
}

extension Array {
    /// The element at `index`, or nil past the end.
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
