import Foundation
import Messaging
import SurveyWire
import Testing
@testable import ClientSDK

/// The SDK's own messaging vocabulary against Messaging's: each input and step means the same, and a context reaches
/// targeting with every field under its attribute name.
@Suite struct InAppMessagingTypesTests {
    static let inputs: [Microsurvey.Input] = [
        .showPrompt, .closePrompt, .continueToSurvey, .surveyAppeared, .sheetDismissedByDrag, .select("Good"), .tapPrivacyNotice,
        .submit, .confirmationViewed, .closeSurvey,
    ]

    @Test func everyInputIsTheFlowsInputOfTheSameName() {
        for input in Self.inputs { #expect("\(input.flowInput)" == "\(input)") }
        #expect(Set(Self.inputs.map { "\($0.flowInput)" }).count == Self.inputs.count)
    }

    @Test func everyStepIsTheFlowsStepOfTheSameName() throws {
        let data = try WireJSON.decode(JSONValue.self, from: #"{"messages": {"m": {"surface": "microsurvey", "style": "MICROSURVEY", "text": "Q?", "microsurveyConfig": {"options": ["Good", "Bad"]}}}}"#)
        let message = try #require(MessagingRecipe(feature: FeatureMerge.merge(FirefoxMessagingDefaults.feature, data)).messages.first { $0.key == "m" })
        var survey = Microsurvey(flow: MicrosurveyFlow(model: try MicrosurveyModel(message: message, strings: StringTables())),
                                 message: InAppMessage(message))
        var seen: [String] = ["\(survey.step)"]
        for input: Microsurvey.Input in [.showPrompt, .continueToSurvey, .select("Bad"), .submit, .closeSurvey] {
            _ = try survey.flow.handle(input.flowInput)
            // Outcomes print with their type's path: the two enums' names differ, their cases do not.
            #expect("\(survey.step)".replacingOccurrences(of: "ClientSDK.Microsurvey.", with: "")
                    == "\(survey.flow.step)".replacingOccurrences(of: "Messaging.MicrosurveyFlow.", with: ""))
            seen.append("\(survey.step)")
        }
        #expect(seen == ["hidden", "prompt", "survey(selected: nil)", "survey(selected: Optional(\"Bad\"))", "confirmation(selected: \"Bad\")",
                         "finished(ClientSDK.Microsurvey.Outcome.completed)"])
        #expect(survey.question == "Q?" && survey.options == ["Good", "Bad"] && survey.message.key == "m")
    }

    @Test func aContextReachesTargetingFieldByField() {
        let installed = Date(timeIntervalSince1970: 1_780_000_000)
        let context = AppContext(appName: "App", appID: "org.app", channel: "beta", appVersion: "2.1", os: "Linux", osVersion: "6.1",
                                 locale: "de-AT", installationDate: installed, updateDate: installed.addingTimeInterval(86_400),
                                 isDefaultBrowser: true, isFxaSignedIn: true, numberOfAppLaunches: 7, allowedTipsNotifications: true,
                                 isInactiveNewUser: true, custom: ["plan": "pro", "visits": 3, "ratio": 0.5, "beta": false])
        let attributes = context.targeting.attributes(now: installed.addingTimeInterval(3 * 86_400))
        #expect(attributes["app_name"] == "App" && attributes["app_id"] == "org.app" && attributes["channel"] == "beta")
        #expect(attributes["app_version"] == "2.1" && attributes["os"] == "Linux" && attributes["os_version"] == "6.1")
        #expect(attributes["language"] == "de" && attributes["region"] == "AT")
        #expect(attributes["days_since_install"] == 3 && attributes["days_since_update"] == 2)
        #expect(attributes["is_default_browser"] == true && attributes["is_fxa_signed_in"] == true)
        #expect(attributes["number_of_app_launches"] == 7 && attributes["allowed_tips_notifications"] == true)
        #expect(attributes["is_inactive_new_user"] == true)
        #expect(attributes["plan"] == "pro" && attributes["visits"] == 3 && attributes["ratio"] == 0.5 && attributes["beta"] == false)
    }
}
