import SurveyWire

/// Firefox for iOS's onboarding feature (seed 001; reference §3.5): cards filtered by onboarding type, prerequisites and
/// disqualifiers, sorted by `order`.
public struct OnboardingFeature: Sendable, Equatable {
    public enum Action: String, Sendable, Equatable, CaseIterable {
        case nextCard = "next-card"
        case forwardOneCard = "forward-one-card", forwardTwoCard = "forward-two-card", forwardThreeCard = "forward-three-card"
        case syncSignIn = "sync-sign-in", requestNotifications = "request-notifications", setDefaultBrowser = "set-default-browser"
        case openDefaultBrowserPopup = "open-default-browser-popup", openInstructionsPopup = "open-instructions-popup"
        case readPrivacyPolicy = "read-privacy-policy", openIOSFxSettings = "open-ios-fx-settings", endOnboarding = "end-onboarding"
    }

    public struct Button: Sendable, Equatable {
        public var title: String
        public var action: Action
    }

    public struct Link: Sendable, Equatable {
        public var title: String
        public var url: String
    }

    public struct Card: Sendable, Equatable {
        public var key: String
        public var cardType: String
        public var order: Int
        public var title: String
        public var body: String
        public var image: String
        public var link: Link?
        public var primary: Button
        public var secondary: Button?
        public var prerequisites: [String]
        public var disqualifiers: [String]
        public var onboardingType: String
    }

    public var conditions: [String: String]
    public var cards: [Card]
    public var dismissable: Bool

    static let cardKeys: Set<String> = ["card-type", "order", "title", "body", "image", "link", "buttons", "multiple-choice-buttons",
                                        "instructions-popup", "prerequisites", "disqualifiers", "onboarding-type"]

    /// Loads the feature value. Unknown keys, unknown button actions and condition names that `conditions` does not
    /// define are errors here (Firefox silently hides the card or ignores its disqualifiers: bug B9).
    public init(feature value: JSONValue) throws(MessagingError) {
        let r = try JSONReader(value, path: "onboarding", allowed: ["conditions", "cards", "dismissable", "enableModernUi"])
        conditions = (try r.stringMap("conditions") ?? [:]).merging(["ALWAYS": "true", "NEVER": "false"]) { mine, _ in mine }
        dismissable = try r.bool("dismissable", default: false)
        var cards: [Card] = []
        for (key, raw) in (try r.objectMap("cards") ?? [:]).sorted(by: { $0.key < $1.key }) {
            let path = "onboarding.cards.\(key)"
            let c = try JSONReader(raw, path: path, allowed: Self.cardKeys)
            func button(_ value: JSONValue, _ path: String) throws(MessagingError) -> Button {
                let b = try JSONReader(value, path: path, allowed: ["title", "action"])
                let name = try b.string("action", default: "next-card")
                guard let action = Action(rawValue: name) else {
                    throw MessagingError(code: "unknown_action", message: "\(path).action `\(name)` is not an onboarding action")
                }
                return Button(title: try b.string("title", default: "Onboarding/Onboarding.Sync.Skip.Action.v114"), action: action)
            }
            var primary = Button(title: "Onboarding/Onboarding.Sync.Skip.Action.v114", action: .forwardOneCard)
            var secondary: Button?
            if c.has("buttons") {
                let b = try JSONReader(c.object["buttons"]!, path: path + ".buttons", allowed: ["primary", "secondary"])
                if b.has("primary") { primary = try button(b.object["primary"]!, path + ".buttons.primary") }
                if b.has("secondary") { secondary = try button(b.object["secondary"]!, path + ".buttons.secondary") }
            }
            var link: Link?
            if c.has("link") {
                let l = try JSONReader(c.object["link"]!, path: path + ".link", allowed: ["title", "url"])
                link = Link(title: try l.string("title", default: "Learn more about our privacy policy"),
                            url: try l.string("url", default: "https://www.mozilla.org/privacy/firefox/"))
            }
            let cardType = try c.string("card-type", default: "basic")
            guard ["basic", "multiple-choice"].contains(cardType) else {
                throw MessagingError(code: "wrong_type", message: "\(path).card-type must be basic or multiple-choice")
            }
            let type = try c.string("onboarding-type", default: "fresh-install")
            guard ["fresh-install", "upgrade"].contains(type) else {
                throw MessagingError(code: "wrong_type", message: "\(path).onboarding-type must be fresh-install or upgrade")
            }
            let card = Card(key: key, cardType: cardType, order: try c.int("order", default: 10), title: try c.string("title", default: ""),
                            body: try c.string("body", default: ""), image: try c.string("image", default: "welcome-globe"), link: link,
                            primary: primary, secondary: secondary, prerequisites: try c.strings("prerequisites") ?? [],
                            disqualifiers: try c.strings("disqualifiers") ?? [], onboardingType: type)
            for name in card.prerequisites + card.disqualifiers where conditions[name] == nil {
                throw MessagingError(code: "unknown_condition", message: "\(path) names the condition `\(name)`, which `conditions` does not define")
            }
            cards.append(card)
        }
        for (name, expression) in conditions {
            if let error = TargetingHelper.validate(expression) {
                throw MessagingError(code: "invalid_condition", message: "onboarding condition \(name): \(error.message)")
            }
        }
        self.cards = cards
    }

    /// The cards to show for `type`, in order: every prerequisite true (none is fine) and no disqualifier true (ANY, as
    /// the docs say; none never hides a card: bug B10); an expression error hides the card. Ties in `order` go by key.
    public func cards(for type: String, helper: TargetingHelper) -> [Card] {
        func holds(_ name: String) -> Bool? {
            guard let expression = conditions[name] else { return nil }
            return try? helper.evaluate(expression)
        }
        return cards.filter { card in
            guard card.onboardingType == type else { return false }
            for name in card.prerequisites where holds(name) != true { return false }
            for name in card.disqualifiers {
                switch holds(name) {
                case true?, nil: return false  // disqualified, or an error
                case false?: continue
                }
            }
            return true
        }.sorted { $0.order != $1.order ? $0.order < $1.order : $0.key < $1.key }
    }
}
