import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// Feature configuration from the mock server, and messaging on a real SDK client against it.
@Suite(.timeLimit(.minutes(2))) struct MessagingFlowTests {
    /// The `messaging` feature read as an app's own type (its messages by key, each kept as JSON).
    struct Recipe: Codable {
        var messages: [String: JSONValue] = [:]
    }

    static let mvpRecipe: JSONValue = try! WireJSON.decode(JSONValue.self, from: """
        {"messages": {"ios-homepage-csat-microsurvey-en": {
          "trigger-if-all": ["USER_EN_SPEAKER", "MORE_THAN_24H_SINCE_INSTALLED_OR_UPDATED", "SECOND_HOMEPAGE_VIEW"],
          "style": "MICROSURVEY", "surface": "microsurvey",
          "text": "How satisfied are you with your Firefox homepage?",
          "button-label": "Microsurvey/Microsurvey.Prompt.Button.v127", "title": "Microsurvey/Microsurvey.Prompt.TitleLabel.v127",
          "microsurveyConfig": {"utm-content": "homepage", "icon": "homeLarge", "options": ["Good", "Bad"]}}}}
        """)

    @Test func featuresAreBucketedPerClientAndBadInputIsRefused() async throws {
        try await Trio.with { trio in
            try await trio.admin.setFeature(app: "survey-sdk", feature: "onboarding", [
                "rollout": ["dismissable": true, "cards": ["welcome": ["title": "Hello"]]],
                "experiment": ["slug": "new-title", "branches": [["slug": "control", "ratio": 1, "value": [:]],
                                                                 ["slug": "treatment", "ratio": 1, "value": ["cards": ["welcome": ["title": "{experiment}!"]]]]]],
            ])
            var branches: [String: Int] = [:]
            for n in 0..<40 {
                let id = "client-\(n)"
                let answer = try await trio.admin.features(app: "survey-sdk", clientID: id)
                let again = try await trio.admin.features(app: "survey-sdk", clientID: id)
                #expect(answer == again)
                let branch = try #require(answer.enrollments.first)
                #expect(branch.slug == "new-title" && branch.featureID == "onboarding")
                branches[branch.branch, default: 0] += 1
                let title = answer.features["onboarding"]?["cards"]?["welcome"]?["title"]
                #expect(title == (branch.branch == "treatment" ? "new-title!" : "Hello"))
                #expect(answer.features["onboarding"]?["dismissable"] == true)
            }
            #expect(branches.keys.sorted() == ["control", "treatment"])
            // Bad input: unknown key, bad branches, missing client id, not JSON; nothing changes.
            let url = trio.server.url + "/__admin/features/survey-sdk/onboarding"
            let unknown = try await trio.http.send(.json(url, method: "PUT", body: ["rollout": 1, "trigger": 2] as JSONValue))
            #expect(unknown.status == 400 && errorCode(unknown) == "unknown_key")
            let noBranches = try await trio.http.send(.json(url, method: "PUT", body: ["experiment": ["slug": "x", "branches": []]] as JSONValue))
            #expect(noBranches.status == 400)
            let notJSON = try await trio.http.send(TransportRequest(method: "PUT", url: url, headers: [("Content-Type", "application/json")],
                                                               body: Array("{".utf8)))
            #expect(notJSON.status == 400)
            // A body that does not say it is JSON is refused before it is read (PROTOCOL.md §7).
            let untyped = try await trio.http.send(TransportRequest(method: "PUT", url: url, body: Array("{}".utf8)))
            #expect(untyped.status == 415 && errorCode(untyped) == "unsupported_media_type")
            let noClient = try await trio.http.send(TransportRequest(url: trio.server.url + "/features/survey-sdk"))
            #expect(noClient.status == 400 && errorCode(noClient) == "missing_field")
            #expect(try await trio.admin.features(app: "survey-sdk", clientID: "client-1").enrollments.count == 1)
            let other = try await trio.admin.features(app: "other-app", clientID: "client-1")
            #expect(other.features.isEmpty && other.enrollments.isEmpty)
        }
    }

    /// The seed's microsurvey served by the mock server: the SDK fetches it at start, shows it at the second homepage
    /// view, and its telemetry reaches the server; offline, the cached copy still serves.
    @Test func theServedMicrosurveyRunsOnTheDevice() async throws {
        try await Trio.with { trio in
            try await trio.admin.setFeature(app: "survey-sdk", feature: "messaging", ["rollout": Self.mvpRecipe])
            let setup = try await StudySetup.make(trio, scheduling: "device")
            let storage = temporaryDirectory("messaging")
            var configuration = clientConfiguration(trio, setup.credentials, storage: storage)
            configuration.heartbeatInterval = nil
            let client = try SurveyClient(configuration: configuration)
            try await client.start()
            #expect(await client.features?.featureIDs.contains("messaging") == true)
            let context = AppContext(locale: "en-US", installationDate: Date().addingTimeInterval(-3 * 86_400))
            try await client.recordBehavior("homepage_viewed", viewID: "first")
            try await client.recordBehavior("homepage_viewed", viewID: "first")  // the same view again: not counted
            #expect(try await client.nextMessage(for: "microsurvey", context: context).message == nil)
            try await client.recordBehavior("homepage_viewed", viewID: "second")
            let message = try #require(try await client.nextMessage(for: "microsurvey", context: context).message)
            var survey = try await client.microsurvey(for: message)
            for input: Microsurvey.Input in [.showPrompt, .continueToSurvey, .surveyAppeared, .select("Good"), .submit, .confirmationViewed, .closeSurvey] {
                (survey, _) = try await client.microsurvey(survey, input)
            }
            #expect(survey.step == .finished(.completed))
            #expect(try await client.nextMessage(for: "microsurvey", context: context).message == nil)
            _ = try await client.flushTelemetry()
            let events = try await trio.admin.telemetry(clientID: await client.clientID, ping: "events")
                .flatMap { $0.body["events"]?.arrayValue ?? [] }
                .compactMap { event -> String? in
                    guard let category = event["category"]?.stringValue, ["messaging", "microsurvey"].contains(category) else { return nil }
                    return category + "." + (event["name"]?.stringValue ?? "")
                }
            #expect(events == ["messaging.expired", "messaging.shown", "messaging.clicked", "microsurvey.shown",
                               "microsurvey.submit_button_tapped", "messaging.completed", "microsurvey.confirmation_shown"])
            await client.close()

            // Offline: the server refuses /features; the cached recipe still serves a new client on the same storage.
            try await trio.admin.setFaults([.init(route: "/features/*", status: 503, probability: 1)])
            let again = try SurveyClient(configuration: configuration)
            try await again.start()
            #expect(try await again.featureValue("messaging", defaults: Recipe()).messages["ios-homepage-csat-microsurvey-en"] != nil)
            // Its state remembers the survey was completed.
            #expect(try await again.nextMessage(for: "microsurvey", context: context).message == nil)
            await again.close()
            // A fresh device that never reached the server: the app's defaults.
            let fresh = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: temporaryDirectory("messaging")))
            #expect(try await fresh.featureValue("messaging", defaults: Recipe()).messages.isEmpty)
            await fresh.close()
        }
    }
}

/// `survey-cli messaging eval` as a user runs it.
@Suite struct MessagingCLITests {
    func run(_ arguments: [String]) async throws -> (Int32, String) {
        try await runSurveyCLI(["messaging", "eval"] + arguments)
    }

    @Test func evalPrintsTheChoiceAndEachTrigger() async throws {
        let dir = temporaryDirectory("eval")
        let recipe = dir.appendingPathComponent("recipe.json"), context = dir.appendingPathComponent("context.json")
        try WireJSON.encode(MessagingFlowTests.mvpRecipe).write(to: recipe)
        try Data(#"{"locale": "en-US", "days_since_install": 3, "days_since_update": 3}"#.utf8).write(to: context)
        let (status1, once) = try await run(["--recipe", recipe.path, "--context", context.path, "--event", "homepage_viewed=1"])
        #expect(status1 == 0)
        #expect(once.contains("would show: nothing"))
        #expect(once.contains("SECOND_HOMEPAGE_VIEW = false"))
        let (status2, twice) = try await run(["--recipe", recipe.path, "--context", context.path, "--event", "homepage_viewed=2", "--json"])
        #expect(status2 == 0)
        let object = try WireJSON.decode(JSONValue.self, from: twice)
        #expect(object["selected"] == "ios-homepage-csat-microsurvey-en")
        #expect(object["trace"]?.arrayValue?.first?["triggers"]?.arrayValue?.compactMap { $0["result"]?.stringValue } == ["true", "true", "true"])
        try Data(#"{"messages": {}, "bogus": 1}"#.utf8).write(to: recipe)
        #expect(try await run(["--recipe", recipe.path, "--context", context.path]).0 == 64)
        #expect(try await run(["--recipe", "/nonexistent", "--context", context.path]).0 == 64)
    }

    @Test func jexlPrintsEachValueAsFirefoxsEngineGivesIt() async throws {
        let context = temporaryDirectory("jexl").appendingPathComponent("context.json")
        try Data(#"{"version": 120, "list": [1, 2, 3]}"#.utf8).write(to: context)
        let (status, output) = try await runSurveyCLI(["messaging", "jexl", "--context", context.path,
                                                       "version == 120", "version in [120]", "'é'", "list[.x > 1]"])
        #expect(status == 1, "an expression that errs makes the exit status 1")
        let lines = try output.split(separator: "\n").map { try WireJSON.decode(JSONValue.self, from: Data($0.utf8)) }
        #expect(lines.map { $0["expression"]?.stringValue } == ["version == 120", "version in [120]", "'é'", "list[.x > 1]"])
        #expect(lines.map { $0["value"] } == [.bool(true), .bool(false), nil, .array([])])
        #expect(lines[2]["error"] == "parse_error")
        #expect(try await runSurveyCLI(["messaging", "jexl", "1 + 1"]) == (0, #"{"expression":"1 + 1","value":2}"# + "\n"))
        #expect(try await runSurveyCLI(["messaging", "jexl"]).0 == 64)
        #expect(try await runSurveyCLI(["messaging", "jexl", "--context", "/nonexistent", "1"]).0 == 64)
    }
}
}
