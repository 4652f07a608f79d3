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

    /// Issue 49: the devices API was the one listener without the servers' guards (a foreign page could create a
    /// device with a `text/plain` POST, a foreign `Host` read the list), a descriptor limit let it crash past about
    /// 330 devices, a stop during a start left the device running, and a wait outlived its device.
    @Test func theDevicesAPIKeepsTheServersPromises() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "fleet", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago)))
            _ = try await trio.admin.createSurvey(study: study.studyID, moodSurvey)
            let people = try await trio.admin.createParticipants(study: study.studyID, .init(count: 13))
            // A descriptor limit of 290: (290 - 256 kept for the rest) / 3 per device = 11 devices.
            let directory = temporaryDirectory("devices")
            let devices = try await ServerProcess.launch(
                executable: URL(fileURLWithPath: "/usr/bin/prlimit"),
                arguments: ["--nofile=290:290", try Executables.locate("survey-cli").path, "devices", "serve", "--server", trio.server.url,
                            "--relay", trio.relay.url, "--data-dir", directory.path, "--parent-pid", String(getpid())],
                logFile: directory.appendingPathComponent("serve.log"))
            let base = devices.url + "/__devices"
            func create(_ who: AdminWire.Credentials, headers: [(String, String)] = [("Content-Type", "application/json")]) async throws -> TransportResponse {
                let body = try WireJSON.encode(JSONValue.object(["patient_id": .string(who.patientID), "password": .string(who.password),
                                                                 "timezone": "America/Chicago", "telemetry_url": "http://attacker.example"]))
                return try await trio.http.send(TransportRequest(method: "POST", url: base, headers: headers, body: Array(body)))
            }
            // The guard: a page's simple request, a foreign Origin, a foreign Host (DNS rebinding).
            let simple = try await create(people[0], headers: [("Content-Type", "text/plain"), ("Origin", "http://attacker.example")])
            #expect(simple.status == 403 && errorCode(simple) == "foreign_origin", "\(simple.status)")
            let untyped = try await create(people[0], headers: [("Content-Type", "text/plain")])
            #expect(untyped.status == 415 && errorCode(untyped) == "unsupported_media_type")
            let rebound = try await trio.http.send(TransportRequest(url: base, headers: [("Host", "attacker.example")]))
            #expect(rebound.status == 403 && errorCode(rebound) == "foreign_host")
            let (_, none) = try await Self.call(trio, "GET", base)
            #expect(none.arrayValue?.isEmpty == true, "a refused create made a device")

            // The capacity the descriptor limit allows, refused past it with a stable code; the process stays up.
            var ids: [String] = []
            for who in people.prefix(11) {
                let made = try await create(who)
                #expect(made.status == 201, "\(String(decoding: made.body, as: UTF8.self))")
                ids += [try made.decode(JSONValue.self)["device_id"]?.stringValue].compactMap { $0 }
            }
            let past = try await create(people[11])
            #expect(past.status == 409 && errorCode(past) == "too_many_devices", "\(String(decoding: past.body, as: UTF8.self))")
            // A push to every device at the limit: each gets it, nothing dies.
            _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 120)
            for id in ids {
                let (_, page) = try await Self.call(trio, "GET", base + "/\(id)/events?after=0&until=survey_available&wait=20s")
                #expect(page["events"]?.arrayValue?.last?["event"] == "survey_available", "\(id)")
            }
            #expect(devices.isRunning)
            // At the limit the health route (the container's HEALTHCHECK asks it) still answers, and cheaply.
            let (healthStatus, health) = try await Self.call(trio, "GET", base + "/health")
            #expect(healthStatus == 200 && health == ["status": "ok"])

            // Start and stop at once, in either order of arrival: each is answered in turn (a stop during a start waits
            // for it and then stops the device), never 409 `storage_locked`, and the device ends in a state a last stop
            // can always end.
            for round in 0..<6 {
                let id = ids[round]
                let (stopped, _) = try await Self.call(trio, "POST", base + "/\(id)/stop")
                #expect(stopped == 200)
                async let started = Self.call(trio, "POST", base + "/\(id)/start")
                try await Task.sleep(for: .milliseconds(round * 3))
                async let stopping = Self.call(trio, "POST", base + "/\(id)/stop")
                let (startStatus, _) = try await started
                let (stopStatus, stopView) = try await stopping
                #expect(startStatus == 200 && stopStatus == 200, "round \(round): start \(startStatus), stop \(stopStatus) \(stopView)")
                let (viewed, view) = try await Self.call(trio, "GET", base + "/\(id)")
                #expect(viewed == 200 && (view["state"] == "stopped" || view["state"] == "running"), "round \(round): \(view)")
                let (_, last) = try await Self.call(trio, "POST", base + "/\(id)/stop")
                #expect(last["state"] == "stopped", "round \(round): \(last)")
            }

            // A wait on a device's events ends when the device is deleted, not at its own end.
            let id = ids[10]
            let waitStarted = ContinuousClock.now
            async let waited = Self.call(trio, "GET", base + "/\(id)/events?after=1000&until=submitted&wait=30s")
            try await Task.sleep(for: .milliseconds(300))
            let (deleted, _) = try await Self.call(trio, "DELETE", base + "/\(id)")
            #expect(deleted == 204)
            let (waitStatus, _) = try await waited
            #expect(waitStatus == 200)
            #expect(ContinuousClock.now - waitStarted < .seconds(10), "the wait outlived its device")
            _ = await devices.stop()
        }
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
