import Foundation
import Testing
@testable import Messaging
import SurveyWire

@Suite struct FeatureMergeTests {
    @Test func patchesMergeObjectsReplaceListsAndNullDeletes() {
        let base: JSONValue = ["label": "Ok then", "color": "blue", "list": [1, 2], "nested": ["a": 1, "b": 2], "gone": "x"]
        let patch: JSONValue = ["color": "green", "list": [3], "nested": ["b": 3, "c": 4], "gone": .null, "alt-text": "Go Ahead!"]
        #expect(FeatureMerge.merge(base, patch) == [
            "label": "Ok then", "color": "green", "list": [3], "nested": ["a": 1, "b": 3, "c": 4], "alt-text": "Go Ahead!",
        ])
        // Growable maps: keys from every layer survive.
        let themes = FeatureMerge.layered([["themes": ["default-theme": 1]], ["themes": ["protocol-theme": 2]], ["themes": ["ufi-theme": 3]]])
        #expect(themes == ["themes": ["default-theme": 1, "protocol-theme": 2, "ufi-theme": 3]])
        #expect(FeatureMerge.replacingExperiment(["messages": ["{experiment}-en": ["experiment": "{experiment}"]]], slug: "exp") ==
                ["messages": ["exp-en": ["experiment": "exp"]]])
    }

    /// Seed 001: the experiment gives only what differs ("A new title"); the merged card keeps everything else.
    @Test func theNewTitleOverrideKeepsTheRestOfTheCard() throws {
        let merged = FeatureMerge.merge(Fixtures.onboardingDefaults, Fixtures.json(Fixtures.newTitleOverride))
        let welcome = merged["cards"]?["welcome"]
        #expect(welcome?["title"] == "A new title")
        #expect(welcome?["body"] == "Onboarding/Onboarding.Welcome.Description.v114")
        #expect(welcome?["order"] == 10)
        #expect(welcome?["link"]?["url"] == "https://www.mozilla.org/privacy/firefox/")
        #expect(welcome?["buttons"]?["primary"]?["action"] == "next-card")
        let feature = try OnboardingFeature(feature: merged)
        let card = try #require(feature.cards.first { $0.key == "welcome" })
        #expect(Fixtures.strings.resolve(card.title) == "A new title")
        let original = try OnboardingFeature(feature: Fixtures.onboardingDefaults).cards.first { $0.key == "welcome" }!
        #expect(Fixtures.strings.resolve(original.title) == "Welcome to an independent internet")
        #expect(Fixtures.strings.resolve(original.body) == "Onboarding/Onboarding.Welcome.Description.v114")  // raw id fallback
    }

    @Test func branchesSplitClientsDeterministically() throws {
        let config = try FeatureConfiguration.parse([
            "rollout": ["enabled": true, "color": "blue"],
            "experiment": ["slug": "exp", "branches": [["slug": "control", "ratio": 1, "value": [:]],
                                                       ["slug": "treatment", "ratio": 1, "value": ["color": "{experiment}-green"]]]],
        ])
        #expect(config.branch(for: "299eed1e-be6d-457d-9e53-da7b1a03f10d")?.slug == config.branch(for: "299eed1e-be6d-457d-9e53-da7b1a03f10d")?.slug)
        var seen: Set<String> = []
        for n in 0..<50 {
            let id = "client-\(n)"
            let value = config.value(for: id)
            seen.insert(config.branch(for: id)!.slug)
            #expect(value["enabled"] == true)
            #expect(value["color"] == (config.branch(for: id)!.slug == "treatment" ? "exp-green" : "blue"))
        }
        #expect(seen == ["control", "treatment"])
        #expect(throws: MessagingError.self) { try FeatureConfiguration.parse(["experiment": ["slug": "x", "branches": []]]) }
        #expect(throws: MessagingError.self) { try FeatureConfiguration.parse(["rollout": 1, "extra": 2]) }
        #expect(throws: MessagingError.self) {
            try FeatureConfiguration.parse(["experiment": ["slug": "x", "branches": [["slug": "a", "ratio": 0]]]])
        }
    }
}

@Suite struct OnboardingTests {
    func helper(_ attributes: [String: JSONValue] = [:]) -> TargetingHelper {
        let context = TargetingContext(installationDate: utc("2026-06-01T00:00:00Z"), custom: attributes)
        return TargetingHelper(context: context.attributes(now: utc("2026-06-10T00:00:00Z")), now: utc("2026-06-10T00:00:00Z"))
    }

    @Test func theDefaultCardsComeInOrderByType() throws {
        let feature = try OnboardingFeature(feature: Fixtures.onboardingDefaults)
        #expect(feature.dismissable)
        #expect(feature.cards(for: "fresh-install", helper: helper()).map(\.key) == ["welcome", "sign-to-sync", "notification-permissions"])
        #expect(feature.cards(for: "upgrade", helper: helper()).isEmpty)  // prerequisites: [NEVER]
        let sync = try #require(feature.cards.first { $0.key == "sign-to-sync" })
        #expect(sync.primary.action == .syncSignIn && sync.secondary?.action == .nextCard)
    }

    /// B9: a card is disqualified when ANY disqualifier holds (Firefox needed all); B10: empty lists never hide a card.
    @Test func disqualifiersAreAnyAndEmptyListsNeverHide() throws {
        let feature = try OnboardingFeature(feature: [
            "conditions": ["SIGNED_IN": "is_fxa_signed_in", "NEW": "days_since_install < 30", "OLD": "days_since_install > 300",
                           "BROKEN": "missing_attribute"],
            "cards": [
                "any": ["order": 1, "disqualifiers": ["OLD", "NEW"]],
                "none": ["order": 2, "prerequisites": [], "disqualifiers": []],
                "needs-new": ["order": 3, "prerequisites": ["NEW"], "disqualifiers": ["OLD"]],
                "broken": ["order": 4, "prerequisites": ["BROKEN"]],
                "broken-disqualifier": ["order": 5, "disqualifiers": ["BROKEN"]],
                "tie-b": ["order": 6], "tie-a": ["order": 6],
            ],
        ])
        #expect(feature.cards(for: "fresh-install", helper: helper()).map(\.key) == ["none", "needs-new", "tie-a", "tie-b"])
        // An unknown condition name is a load-time error, whether prerequisite or disqualifier.
        #expect(throws: MessagingError.self) { try OnboardingFeature(feature: ["cards": ["c": ["disqualifiers": ["NOPE"]]]]) }
        #expect(throws: MessagingError.self) { try OnboardingFeature(feature: ["cards": ["c": ["prerequisites": ["NOPE"]]]]) }
        #expect(throws: MessagingError.self) { try OnboardingFeature(feature: ["cards": ["c": ["buttons": ["primary": ["action": "fly"]]]]]) }
        #expect(throws: MessagingError.self) { try OnboardingFeature(feature: ["cards": ["c": ["type": "upgrade"]]]) }
        #expect(throws: MessagingError.self) { try OnboardingFeature(feature: ["conditions": ["X": "!a"], "cards": [:]]) }
    }
}
