import ArgumentParser
import ClientSDK
import Foundation
import Scheduling
import SurveyWire
import TrioTesting

/// `survey-cli demo`: one participant's whole flow, printed step by step.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the trio (or use running servers) and drive one device through registration, a scheduled push, the survey spec, answers and telemetry.")

    @Option(help: "Directory for the SQLite file, logs and the device's storage.") var dataDir = "./.survey-demo"
    @Option(help: "Use a running mock server at this URL (with --relay).") var server: String?
    @Option(help: "Use a running push relay at this URL (with --server).") var relay: String?

    func run() async throws {
        let dir = URL(fileURLWithPath: dataDir)
        try? FileManager.default.removeItem(at: dir.appendingPathComponent("device"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var trio: Trio?
        let serverURL: String, relayURL: String
        if let server, let relay {
            (serverURL, relayURL) = (server, relay)
        } else {
            say("starting push-relay and mock-server (data in \(dir.path))")
            let started = try await Trio.start(.init(database: dir.appendingPathComponent("mock-server.sqlite").path, logDirectory: dir))
            trio = started
            (serverURL, relayURL) = (started.server.url, started.relay.url)
            say("  mock-server \(serverURL)   push-relay \(relayURL)")
        }
        do {
            try await flow(serverURL: serverURL, relayURL: relayURL, deviceDir: dir.appendingPathComponent("device"))
            await trio?.stop()
        } catch {
            await trio?.stop()
            throw error
        }
    }

    func flow(serverURL: String, relayURL: String, deviceDir: URL) async throws {
        let admin = AdminClient(baseURL: serverURL, http: .init())
        // Monday 2026-05-04 08:59 in America/Chicago (CDT, UTC-5).
        let study = try await admin.createStudy(.init(name: "Demo study", timezone: "America/Chicago", scheduling: "server",
                                                      clock: .init(frozenAt: "2026-05-04T13:59:00Z")))
        say("[1/8] study \(study.studyID) created, clock frozen at \(study.clock.now) (Monday 08:59 in Chicago)")
        let credentials = try await admin.createParticipants(study: study.studyID)[0]
        let surveyID = try await admin.createSurvey(study: study.studyID, .init(
            name: "Weekly mood",
            content: [
                ["question_id": "mood", "question_type": "slider", "question_text": "How is your mood?", "min": "0", "max": "10"],
                ["question_id": "note", "question_type": "free_response", "question_text": "Anything to add?", "text_field_type": "SINGLE_LINE_TEXT"],
            ],
            schedules: [.weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil)]))
        say("[2/8] participant \(credentials.patientID) and survey \(surveyID) (every Monday 09:00 local)")

        let client = try SurveyClient(configuration: .init(
            serverURL: serverURL, relayURL: relayURL, storageDirectory: deviceDir, patientID: credentials.patientID,
            temporaryPassword: credentials.password, newPassword: "demo-password", platform: .android, timeZone: "America/Chicago"))
        var events = client.events.makeAsyncIterator()
        try await client.start()
        guard case .registered(let studyID, let scheduling, let zone)? = await events.next() else { throw DemoError("registration event missing") }
        say("[3/8] device registered: study \(studyID), scheduling \(scheduling), time zone \(zone), push token \(await client.pushToken?.prefix(16) ?? "")…")

        let advanced = try await admin.advanceClock(study: study.studyID, seconds: 120)
        for push in advanced.fired {
            say("[4/8] clock advanced to \(advanced.now): push \(push.uuid) \(push.status) (relay \(push.relayStatus.map(String.init) ?? "-")) for \(push.surveyIDs)")
        }
        guard advanced.fired.contains(where: { $0.status == "sent" }) else { throw DemoError("no push was sent") }

        var stored: StoredSurvey?
        let deadline = ContinuousClock.now + .seconds(15)
        while stored == nil, ContinuousClock.now < deadline, let event = await events.next() {
            switch event {
            case .pushReceived(let id, let surveys): say("      push \(id) received for \(surveys)")
            case .surveyAvailable(let survey): stored = survey
            case .error(let error): say("      device error: \(error)")
            default: break
            }
        }
        guard let stored else { throw DemoError("the survey never arrived") }
        say("[5/8] spec stored on the device: \"\(stored.entry.name)\" with \(stored.entry.content.count) questions; pending: \(await client.pendingSurveys().count)")

        try await client.submit(answers: ["mood": "7", "note": "slept well"], for: surveyID)
        say("[6/8] answers encrypted and uploaded; pending surveys now: \(await client.pendingSurveys().count)")
        let submissions = try await admin.submissions(study: study.studyID)
        for answer in submissions.flatMap(\.answers) {
            say("      server decrypted: \(answer.questionID) = \(answer.answer)")
        }

        let document = try await client.flushTelemetry()
        let pings = try await admin.telemetry(clientID: await client.clientID)
        let eventCount = pings.filter { $0.ping == "events" }.reduce(0) { $0 + ($1.body["events"]?.arrayValue?.count ?? 0) }
        let names = Set(pings.map(\.ping)).sorted().joined(separator: ", ")
        say("[7/8] telemetry ping \(document ?? "-") sent; server holds \(pings.count) ping(s) (\(names)) with \(eventCount) events")
        await client.close()
        say("[8/8] demo complete")
    }

    func say(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}

struct DemoError: Error, CustomStringConvertible {
    var description: String
    init(_ text: String) { description = text }
}
