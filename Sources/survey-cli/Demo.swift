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
        say("[1/9] study \(study.studyID) created, clock frozen at \(study.clock.now) (Monday 08:59 in Chicago)")
        let credentials = try await admin.createParticipants(study: study.studyID)[0]
        let surveyID = try await admin.createSurvey(study: study.studyID, .init(
            name: "Weekly mood",
            content: [
                ["question_id": "mood", "question_type": "slider", "question_text": "How is your mood?", "min": "0", "max": "10"],
                ["question_id": "note", "question_type": "free_response", "question_text": "Anything to add?", "text_field_type": "SINGLE_LINE_TEXT"],
            ],
            schedules: [.weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil)]))
        say("[2/9] participant \(credentials.patientID) and survey \(surveyID) (every Monday 09:00 local)")
        // The seed's MVP microsurvey, served as the `messaging` feature's rollout.
        try await admin.setFeature(app: "survey-sdk", feature: "messaging", ["rollout": try WireJSON.decode(JSONValue.self, from: Self.mvpRecipe)])

        let client = try SurveyClient(configuration: .init(
            serverURL: serverURL, relayURL: relayURL, storageDirectory: deviceDir, patientID: credentials.patientID,
            temporaryPassword: credentials.password, newPassword: "demo-password", platform: .android, timeZone: "America/Chicago",
            telemetryURL: serverURL, featuresURL: serverURL))
        var events = client.events.makeAsyncIterator()
        try await client.start()
        guard case .registered(let studyID, let scheduling, let zone)? = await events.next() else { throw DemoError("registration event missing") }
        say("[3/9] device registered: study \(studyID), scheduling \(scheduling), time zone \(zone), push token \(await client.pushToken?.prefix(16) ?? "")…")

        let advanced = try await admin.advanceClock(study: study.studyID, seconds: 120)
        for push in advanced.fired {
            say("[4/9] clock advanced to \(advanced.now): push \(push.uuid) \(push.status) (relay \(push.relayStatus.map(String.init) ?? "-")) for \(push.surveyIDs)")
        }
        guard advanced.fired.contains(where: { $0.status == "sent" }) else { throw DemoError("no push was sent") }

        var stored: StoredSurvey?
        let deadline = ContinuousClock.now + .seconds(15)
        while stored == nil, ContinuousClock.now < deadline, let event = await events.next() {
            switch event {
            case .pushReceived(let id, let surveys, _): say("      push \(id) received for \(surveys)")
            case .surveyAvailable(let survey): stored = survey
            case .error(let error): say("      device error: \(error)")
            default: break
            }
        }
        guard let stored else { throw DemoError("the survey never arrived") }
        say("[5/9] spec stored on the device: \"\(stored.name)\" with \(stored.questions.count) questions; pending: \(await client.pendingSurveys().count)")

        try await client.submit(answers: ["mood": "7", "note": "slept well"], for: surveyID)
        say("[6/9] answers encrypted and uploaded; pending surveys now: \(await client.pendingSurveys().count)")
        let submissions = try await admin.submissions(study: study.studyID)
        for answer in submissions.flatMap(\.answers) {
            say("      server decrypted: \(answer.questionID) = \(answer.answer)")
        }

        let document = try await client.flushTelemetry()
        let pings = try await admin.telemetry(clientID: await client.clientID)
        let eventCount = pings.filter { $0.ping == "events" }.reduce(0) { $0 + ($1.body["events"]?.arrayValue?.count ?? 0) }
        let names = Set(pings.map(\.ping)).sorted().joined(separator: ", ")
        say("[7/9] telemetry ping \(document ?? "-") sent; server holds \(pings.count) ping(s) (\(names)) with \(eventCount) events")
        try await microsurvey(client)
        await client.close()
        say("[9/9] demo complete")
    }

    /// The seed's MVP microsurvey: nothing at the first homepage view, the prompt at the second; answered.
    func microsurvey(_ client: SurveyClient) async throws {
        let context = AppContext(appName: "Firefox", locale: "en-US", installationDate: Date().addingTimeInterval(-3 * 86_400))
        try await client.recordBehavior("homepage_viewed", viewID: "homepage-1")
        let first = try await client.nextMessage(for: "microsurvey", context: context)
        say("[8/9] homepage view 1: \(first.message == nil ? "no microsurvey" : "microsurvey?!") (SECOND_HOMEPAGE_VIEW = \(first.weighed.first?.triggers.last?.result ?? "-"))")
        try await client.recordBehavior("homepage_viewed", viewID: "homepage-2")
        guard let message = try await client.nextMessage(for: "microsurvey", context: context).message else {
            throw DemoError("the microsurvey did not appear at the second homepage view")
        }
        var survey = try await client.microsurvey(for: message, strings: Self.strings)
        say("      homepage view 2: prompt \"\(survey.promptTitle)\" [\(survey.promptButtonLabel)]")
        say("      question \"\(survey.question)\" options \(survey.options.map { "\"\($0)\"" }.joined(separator: ", "))")
        for input: Microsurvey.Input in [.showPrompt, .continueToSurvey, .surveyAppeared, .select("Satisfied"), .submit, .confirmationViewed, .closeSurvey] {
            (survey, _) = try await client.microsurvey(survey, input)
        }
        let again = try await client.nextMessage(for: "microsurvey", context: context).message
        say("      answered \"Satisfied\": \(survey.step == .finished(.completed) ? "completed" : "\(survey.step)"); shown again: \(again == nil ? "no" : "yes")")
    }

    static let mvpRecipe = """
        {"messages": {"ios-homepage-csat-microsurvey-en": {
          "trigger-if-all": ["USER_EN_SPEAKER", "MORE_THAN_24H_SINCE_INSTALLED_OR_UPDATED", "SECOND_HOMEPAGE_VIEW"],
          "style": "MICROSURVEY", "surface": "microsurvey",
          "text": "How satisfied are you with your Firefox homepage?",
          "button-label": "Microsurvey/Microsurvey.Prompt.Button.v127", "title": "Microsurvey/Microsurvey.Prompt.TitleLabel.v127",
          "microsurveyConfig": {"utm-content": "homepage", "icon": "homeLarge", "options": [
            "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption5.v127", "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption4.v127",
            "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption3.v127", "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption2.v127",
            "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption1.v127", "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption6.v129"]}}}}
        """

    /// The English strings the demo app ships for the recipe's ids.
    static let strings = ["Microsurvey": [
        "Microsurvey.Prompt.Button.v127": "Continue",
        "Microsurvey.Prompt.TitleLabel.v127": "Help us make %@ better. It only takes a minute.",
        "Microsurvey.Survey.Options.LikertScaleOption1.v127": "Very dissatisfied",
        "Microsurvey.Survey.Options.LikertScaleOption2.v127": "Dissatisfied",
        "Microsurvey.Survey.Options.LikertScaleOption3.v127": "Neutral",
        "Microsurvey.Survey.Options.LikertScaleOption4.v127": "Satisfied",
        "Microsurvey.Survey.Options.LikertScaleOption5.v127": "Very satisfied",
        "Microsurvey.Survey.Options.LikertScaleOption6.v129": "I don't use it",
    ]]

    func say(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}

struct DemoError: Error, CustomStringConvertible {
    var description: String
    init(_ text: String) { description = text }
}
