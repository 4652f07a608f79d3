import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// In-app messaging on the device, in memory: the served microsurvey at the second homepage view, its flow and its
/// telemetry, experiment exposure, the state kept across clients, and the cached recipe offline.
@Suite struct MessagingOnDeviceTests {
    static let recipe: JSONValue = try! WireJSON.decode(JSONValue.self, from: """
        {"messages": {"ios-homepage-csat-microsurvey-en": {
          "trigger-if-all": ["USER_EN_SPEAKER", "MORE_THAN_24H_SINCE_INSTALLED_OR_UPDATED", "SECOND_HOMEPAGE_VIEW"],
          "style": "MICROSURVEY", "surface": "microsurvey", "experiment": "csat-test",
          "text": "How satisfied are you with your Firefox homepage?",
          "button-label": "Microsurvey/Microsurvey.Prompt.Button.v127", "title": "Microsurvey/Microsurvey.Prompt.TitleLabel.v127",
          "microsurveyConfig": {"utm-content": "homepage", "icon": "homeLarge", "options": ["Good", "Bad"]}}}}
        """)

    static let context = AppContext(locale: "en-US", installationDate: Date().addingTimeInterval(-3 * 86_400))

    static func client(_ study: MemoryStudy, directory: URL) throws -> SurveyClient {
        try SurveyClient(configuration: MemoryStudy.configuration(directory, relay: false, telemetry: true, features: true), transport: study)
    }

    /// `category.name` of the messaging and microsurvey events the study took.
    static func messagingEvents(_ study: MemoryStudy) -> [String] {
        study.pings("events").flatMap { $0.body["events"]?.arrayValue ?? [] }.compactMap { event -> String? in
            guard let category = event["category"]?.stringValue, ["messaging", "microsurvey", "nimbus_events"].contains(category) else { return nil }
            return category + "." + (event["name"]?.stringValue ?? "")
        }
    }

    @Test func theServedMicrosurveyShowsAtTheSecondViewAndIsAnsweredOnce() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        study.setFeatures(["features": ["messaging": Self.recipe],
                           "enrollments": [["slug": "csat-test", "branch": "treatment", "feature_id": "messaging"]]])
        let directory = InMemoryFlowTests.directory()
        let client = try Self.client(study, directory: directory)
        try await client.start()
        #expect(await client.features?.featureIDs == ["messaging"])
        #expect(try await client.recordBehavior("homepage_viewed", viewID: "first"))
        // The same view reporting again within the window counts once (bug B1).
        #expect(try await client.recordBehavior("homepage_viewed", viewID: "first") == false)
        #expect(try await client.nextMessage(for: "microsurvey", context: Self.context).message == nil)
        try await client.recordBehavior("homepage_viewed", viewID: "second")
        let message = try #require(try await client.nextMessage(for: "microsurvey", context: Self.context).message)
        var survey = try await client.microsurvey(for: message)
        #expect(survey.step == .hidden && survey.question == "How satisfied are you with your Firefox homepage?" && survey.options == ["Good", "Bad"])
        for input: Microsurvey.Input in [.showPrompt, .continueToSurvey, .surveyAppeared, .select("Good"), .submit, .confirmationViewed, .closeSurvey] {
            (survey, _) = try await client.microsurvey(survey, input)
        }
        #expect(survey.step == .finished(.completed))
        #expect(try await client.nextMessage(for: "microsurvey", context: Self.context).message == nil)
        // An input the flow cannot take now is refused with a code.
        do {
            _ = try await client.microsurvey(survey, .submit)
            Issue.record("a finished microsurvey took a submit")
        } catch {
            #expect(error.kind == .invalidTransition)
        }
        _ = try await client.flushTelemetry()
        let events = Self.messagingEvents(study)
        #expect(events.contains("nimbus_events.exposure"))
        #expect(events.filter { $0 != "nimbus_events.exposure" } == [
            "messaging.expired", "messaging.shown", "messaging.clicked", "microsurvey.shown",
            "microsurvey.submit_button_tapped", "messaging.completed", "microsurvey.confirmation_shown"])
        await client.close()

        // Offline (the features route fails): the cached recipe serves the next client, which remembers the answer.
        study.setFeatures(nil)
        let again = try Self.client(study, directory: directory)
        try await again.start()
        #expect(await again.featureJSON("messaging", defaults: [:])["messages"]?["ios-homepage-csat-microsurvey-en"] != nil)
        #expect(try await again.nextMessage(for: "microsurvey", context: Self.context).message == nil)
        #expect(await again.recordedBehaviors == ["homepage_viewed"])
        await again.close()
    }

    @Test func aMalformedMessageIsReportedOnceAndSkipped() async throws {
        let study = MemoryStudy(ingestsTelemetry: true)
        study.setFeatures(["features": ["messaging": ["messages": ["broken": ["surface": "microsurvey"]]]], "enrollments": []])
        let client = try Self.client(study, directory: InMemoryFlowTests.directory())
        _ = try await client.refreshFeatures()
        for _ in 0..<3 { #expect(try await client.nextMessage(for: "microsurvey", context: Self.context).message == nil) }
        _ = try await client.flushTelemetry()
        #expect(Self.messagingEvents(study).filter { $0 == "messaging.malformed" }.count == 1)
        await client.close()
    }

    @Test func aClickedMessageBuildsItsActionURL() async throws {
        let study = MemoryStudy()
        study.setFeatures(["features": ["messaging": ["messages": ["open-settings": [
            "surface": "new-tab-card", "style": "DEFAULT", "text": "Try settings", "action": "OPEN_SETTINGS",
            "trigger-if-all": ["ALWAYS"]]]]], "enrollments": []])
        let client = try Self.client(study, directory: InMemoryFlowTests.directory())
        _ = try await client.refreshFeatures()
        let message = try #require(try await client.nextMessage(for: "new-tab-card", context: Self.context).message)
        try await client.messageDisplayed(message)
        #expect(message.hasAction && message.text == "Try settings" && message.surface == "new-tab-card")
        let built = try await client.messageClicked(message, context: Self.context)
        #expect(built?.url.hasPrefix("firefox://") == true)
        try await client.messageDismissed(message)
        await client.close()
    }

    @Test func theAppsOwnAttributesReachTheTriggersAndTheChoiceSaysWhy() async throws {
        let study = MemoryStudy()
        study.setFeatures(["features": ["messaging": [
            "triggers": ["PRO_REGULAR": "plan == 'pro' && visits > 2 && beta"],
            "messages": ["pro-tip": ["surface": "new-tab-card", "style": "DEFAULT", "text": "Pro tip", "trigger-if-all": ["PRO_REGULAR"]]],
        ]], "enrollments": []])
        let client = try Self.client(study, directory: InMemoryFlowTests.directory())
        _ = try await client.refreshFeatures()
        var context = Self.context
        context.custom = ["plan": "pro", "visits": 2, "beta": true]
        let before = try await client.nextMessage(for: "new-tab-card", context: context)
        #expect(before.message == nil)
        #expect(before.weighed.map(\.key) == ["pro-tip"] && before.weighed.first?.outcome == "not_eligible")
        #expect(before.weighed.first?.triggers == [MessageChoice.Trigger(name: "PRO_REGULAR", result: "false")])
        context.custom["visits"] = 3.0
        let after = try await client.nextMessage(for: "new-tab-card", context: context)
        #expect(after.message?.key == "pro-tip" && after.weighed.first?.outcome == "selected")
        #expect(after.message?.hasAction == false)
        #expect(try await client.messageClicked(#require(after.message), context: context) == nil)
        await client.close()
    }
}
