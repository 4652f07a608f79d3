import Foundation
@testable import Messaging
import SurveyWire

/// The seeds' recipes, verbatim where the seed gives JSON.
enum Fixtures {
    /// Seed 000, "MVP Example Recipe".
    static let mvpMicrosurveyRecipe = """
    {
      "messages": {
        "ios-homepage-csat-microsurvey-en": {
          "trigger-if-all": [
            "USER_EN_SPEAKER",
            "MORE_THAN_24H_SINCE_INSTALLED_OR_UPDATED",
            "SECOND_HOMEPAGE_VIEW"
          ],
          "style": "MICROSURVEY",
          "surface": "microsurvey",
          "text": "How satisfied are you with your Firefox homepage?",
          "button-label": "Microsurvey/Microsurvey.Prompt.Button.v127",
          "title": "Microsurvey/Microsurvey.Prompt.TitleLabel.v127",
          "microsurveyConfig": {
            "utm-content": "homepage",
            "icon": "homeLarge",
            "options": [
              "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption5.v127",
              "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption4.v127",
              "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption3.v127",
              "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption2.v127",
              "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption1.v127",
              "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption6.v129"
            ]
          }
        }
      }
    }
    """

    /// The app's string tables for the ids the recipes use.
    static let strings = StringTables([
        "Microsurvey": [
            "Microsurvey.Prompt.Button.v127": "Continue",
            "Microsurvey.Prompt.TitleLabel.v127": "Help us make %@ better. It only takes a minute.",
            "Microsurvey.Survey.Options.LikertScaleOption1.v127": "Very dissatisfied",
            "Microsurvey.Survey.Options.LikertScaleOption2.v127": "Dissatisfied",
            "Microsurvey.Survey.Options.LikertScaleOption3.v127": "Neutral",
            "Microsurvey.Survey.Options.LikertScaleOption4.v127": "Satisfied",
            "Microsurvey.Survey.Options.LikertScaleOption5.v127": "Very satisfied",
            "Microsurvey.Survey.Options.LikertScaleOption6.v129": "I don't use it",
        ],
        "Onboarding": ["Onboarding.Welcome.Title.v114": "Welcome to an independent internet"],
    ], appName: "Firefox")

    /// Seed 001's default cards (welcome, sync, notifications), in the feature's shape.
    static let onboardingDefaults: JSONValue = [
        "dismissable": true,
        "conditions": ["ALWAYS": "true", "NEVER": "false"],
        "cards": [
            "welcome": [
                "title": "Onboarding/Onboarding.Welcome.Title.v114", "body": "Onboarding/Onboarding.Welcome.Description.v114",
                "order": 10, "image": "welcome-globe",
                "link": ["title": "Onboarding/Onboarding.Welcome.Link.Action.v114", "url": "https://www.mozilla.org/privacy/firefox/"],
                "buttons": ["primary": ["title": "Onboarding/Onboarding.Welcome.Action.v114", "action": "next-card"]],
                "onboarding-type": "fresh-install", "prerequisites": ["ALWAYS"],
            ],
            "sign-to-sync": [
                "title": "Onboarding/Onboarding.Sync.Title.v114", "body": "Onboarding/Onboarding.Sync.Description.v114",
                "order": 20, "image": "sync-devices",
                "buttons": ["primary": ["title": "Onboarding/Onboarding.Sync.SignIn.Action.v114", "action": "sync-sign-in"],
                            "secondary": ["title": "Onboarding/Onboarding.Sync.Skip.Action.v114", "action": "next-card"]],
                "onboarding-type": "fresh-install", "prerequisites": ["ALWAYS"],
            ],
            "notification-permissions": [
                "title": "Onboarding/Onboarding.Notification.Title.v114", "body": "Onboarding/Onboarding.Notification.Description.v114",
                "order": 30, "image": "notifications",
                "buttons": ["primary": ["title": "Onboarding/Onboarding.Notification.TurnOnNotifications.Action.v114", "action": "request-notifications"],
                            "secondary": ["title": "Onboarding/Onboarding.Notification.Skip.Action.v115", "action": "next-card"]],
                "onboarding-type": "fresh-install", "prerequisites": ["ALWAYS"],
            ],
            "update-welcome": [
                "title": "Onboarding/Onboarding.Upgrade.Title", "order": 10, "onboarding-type": "upgrade", "prerequisites": ["NEVER"],
            ],
        ],
    ]

    /// Seed 001, "Experimenter card config".
    static let newTitleOverride = """
    {"cards": {"welcome": {"title": "A new title"}}}
    """

    static func json(_ text: String) -> JSONValue { try! WireJSON.decode(JSONValue.self, from: text) }

    /// The Firefox defaults with `recipe` merged over them, loaded.
    static func recipe(_ text: String, knownEvents: Set<String>? = FirefoxMessagingDefaults.eventIDs) throws -> MessagingRecipe {
        try MessagingRecipe(feature: FeatureMerge.merge(FirefoxMessagingDefaults.feature, json(text)), knownEvents: knownEvents)
    }
}
