import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The mock server's injected faults (`PUT /__admin/faults`), and what the SDK makes of them.
@Suite(.timeLimit(.minutes(2))) struct ServerFaultTests {
    /// A registered client holding the Monday survey, ready to answer it.
    func clientWithSurvey(_ trio: Trio) async throws -> (SurveyClient, EventRecorder, StudySetup) {
        let setup = try await StudySetup.make(trio)
        let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
        let recorder = EventRecorder(client)
        try await client.start()
        _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
        _ = try await recorder.survey()
        return (client, recorder, setup)
    }

    @Test func uploadsFailingWith503AreRetriedWithBackoffAndArriveOnce() async throws {
        try await Trio.with { trio in
            let (client, recorder, setup) = try await clientWithSurvey(trio)
            try await trio.admin.setFaults([.init(route: "/upload", status: 503, probability: 1)])
            var failure: SurveyClientError?
            do throws(SurveyClientError) {
                try await client.submit(answers: ["mood": "4"], for: setup.surveyID)
            } catch {
                failure = error
            }
            #expect(failure?.code == "upload_failed")
            #expect(failure?.status == 503)
            // Kept while the server refuses: the answers wait in the outbox (the survey is being submitted, not shown
            // again, and cannot be answered twice); nothing arrived.
            #expect(await client.pendingSurveys().isEmpty)
            #expect(await client.status().uploadsWaiting == 1)
            var again: SurveyClientError?
            do throws(SurveyClientError) { try await client.submit(answers: ["mood": "5"], for: setup.surveyID) } catch { again = error }
            #expect(again?.code == "submission_pending")
            try await Task.sleep(for: .milliseconds(1200))
            #expect(try await trio.admin.submissions(study: setup.study.studyID).isEmpty)
            // The server recovers: the background retry delivers it, once.
            try await trio.admin.setFaults([])
            let (surveyID, _) = try await recorder.wait(timeout: .seconds(15)) { if case .submitted(let id, _) = $0 { id } else { nil } }
            #expect(surveyID == setup.surveyID)
            #expect(await client.pendingSurveys().isEmpty)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await trio.admin.submissions(study: setup.study.studyID).count == 1)
            await client.close()
        }
    }

    /// A new occurrence of a survey whose answers are still on their way is kept, shown once those answers are
    /// accepted, and answered on its own: two occurrences, two submissions, each shown once.
    @Test func anOccurrenceArrivingWhileTheLastAnswersAreStuckIsShownAfterThem() async throws {
        try await Trio.with { trio in
            let (client, recorder, setup) = try await clientWithSurvey(trio)
            try await trio.admin.setFaults([.init(route: "/upload", status: 503, probability: 1)])
            try? await client.submit(answers: ["mood": "4"], for: setup.surveyID)
            let before = await recorder.count
            // A week later the survey is due again while the first answers wait in the outbox.
            let fired = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 7 * 86400)
            #expect(fired.fired.count == 1)
            _ = try await recorder.wait(from: before) { if case .pushReceived = $0 { true } else { nil } }
            try await Task.sleep(for: .milliseconds(300))
            #expect(await recorder.events[before...].contains { if case .surveyAvailable = $0 { true } else { false } } == false)
            try await trio.admin.setFaults([])
            let (_, at) = try await recorder.wait(from: before, timeout: .seconds(15)) { if case .submitted = $0 { true } else { nil } }
            let (again, _) = try await recorder.survey(from: at)
            #expect(again.scheduleUUIDs.count == 1)
            #expect(again.scheduleUUIDs.first == fired.fired.first?.scheduleUUIDs.first)
            try await client.submit(answers: ["mood": "6"], for: setup.surveyID)
            #expect(try await trio.admin.submissions(study: setup.study.studyID).map { $0.answers.first?.answer } == ["4", "6"])
            #expect(await client.pendingSurveys().isEmpty)
            await client.close()
        }
    }

    @Test func pingsRefusedWith503AreRetriedAndStoredOnce() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            let recorder = EventRecorder(client)
            try await client.start()
            // Every telemetry path (`/submit/<app>/<ping>/<schema>/<document id>`) answers 503.
            try await trio.admin.setFaults([.init(route: "/submit/*", status: 503, probability: 1)])
            client.record(category: "test", name: "ping_me")
            _ = try? await client.flushTelemetry()
            #expect(try await trio.admin.telemetry(clientID: await client.clientID, ping: "events").isEmpty)
            #expect(await client.status().pingsWaiting == 1)
            try await trio.admin.setFaults([])
            let (document, _) = try await recorder.wait(timeout: .seconds(15)) { if case .telemetrySent(let id, _, "events") = $0 { id } else { nil } }
            let stored = try await trio.admin.telemetry(clientID: await client.clientID, ping: "events")
            #expect(stored.map(\.documentID) == [document])
            #expect(await client.status().pingsWaiting == 0)
            await client.close()
        }
    }

    @Test func faultsAreSeededDelayedAndScopedToTheirRoute() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, scheduling: "device")
            func heartbeat() async throws -> Int {
                try await mobilePost(trio, "/mobile-heartbeat/ios", patientID: setup.credentials.patientID, password: setup.credentials.password).status
            }
            func pattern(seed: UInt64) async throws -> [Int] {
                try await trio.admin.setFaults([.init(route: "/mobile-heartbeat", status: 500, probability: 0.5, seed: seed)])
                var out: [Int] = []
                for _ in 0..<24 { out.append(try await heartbeat()) }
                return out
            }
            let first = try await pattern(seed: 9)
            #expect(try await pattern(seed: 9) == first)
            #expect(first.contains(500) && first.contains(200))
            #expect(try await pattern(seed: 10) != first)
            // Other routes and the admin API are untouched.
            #expect(try await trio.admin.stats(setup.study.studyID).participants == 1)
            let surveys = try await mobilePost(trio, "/download_surveys", patientID: setup.credentials.patientID, password: setup.credentials.password)
            #expect(surveys.status == 200)
            // A delay without a status slows the route down and then answers normally.
            try await trio.admin.setFaults([.init(route: "/download_surveys", delayMs: .init(min: 300, max: 300), probability: 1)])
            let started = ContinuousClock.now
            let slow = try await mobilePost(trio, "/download_surveys/", patientID: setup.credentials.patientID, password: setup.credentials.password)
            #expect(slow.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            // The injected error is a clear JSON error.
            try await trio.admin.setFaults([.init(route: "/download_surveys", status: 503, probability: 1)])
            let failed = try await mobilePost(trio, "/download_surveys", patientID: setup.credentials.patientID, password: setup.credentials.password)
            #expect(failed.status == 503)
            #expect(errorCode(failed) == "injected_fault")
        }
    }

    @Test func badFaultRulesAreRejected() async throws {
        try await Trio.with { trio async throws in
            func put(_ json: String) async throws -> (Int, String?) {
                let response = try await trio.http.send(TransportRequest(method: "PUT", url: trio.server.url + "/__admin/faults",
                                                                    headers: [("Content-Type", "application/json")], body: Array(json.utf8)))
                return (response.status, errorCode(response))
            }
            #expect(try await put("{\"route\": \"/upload\", \"status\": 503, \"probability\": 1.5}") == (400, "invalid_field"))
            #expect(try await put("{\"route\": \"upload\", \"status\": 503, \"probability\": 1}") == (400, "invalid_field"))
            #expect(try await put("{\"route\": \"/__admin/health\", \"status\": 503, \"probability\": 1}") == (400, "invalid_field"))
            #expect(try await put("{\"route\": \"/upload\", \"status\": 200, \"probability\": 1}") == (400, "invalid_field"))
            #expect(try await put("{\"route\": \"/upload\", \"probability\": 1}") == (400, "invalid_field"))
            #expect(try await put("{\"route\": \"/upload\", \"status\": 503, \"probability\": 1, \"when\": 1}") == (400, "unknown_field"))
            #expect(try await put("{\"route\": \"/upload\", \"status\": 503}") == (400, "missing_field"))
            #expect(try await put("\"x\"") == (400, "invalid_json"))
            #expect(try await put("[]") == (204, nil))
        }
    }
}
}
