import Foundation
import Testing
@testable import Messaging
import SurveyWire

/// A device for the messaging tests: a clock, the event store, the message store, and a context.
struct Device {
    var now = utc("2026-06-10T12:00:00Z")
    var events = EventStore()
    var store = MessageStore()
    var session = "s1"
    var context = TargetingContext(locale: "en-US", installationDate: utc("2026-06-01T09:00:00Z"))

    var helper: TargetingHelper { TargetingHelper(context: context.attributes(now: now), events: events, now: now) }

    mutating func homepageView(_ view: String) {
        now = now.addingTimeInterval(90)
        events.record("homepage_viewed", viewID: view, at: now)
    }

    mutating func next(_ recipe: MessagingRecipe, surface: String = "microsurvey") -> MessageSelection {
        MessageSelector.next(for: surface, recipe: recipe, store: &store, helper: helper, sessionID: session, now: now)
    }
}

@Suite struct MicrosurveyRecipeTests {
    /// B2, B6: the seed's MVP recipe, end to end: nothing at the first homepage view, the prompt at exactly the second.
    @Test func theMVPRecipeAppearsAtTheSecondHomepageView() throws {
        let recipe = try Fixtures.recipe(Fixtures.mvpMicrosurveyRecipe)
        #expect(recipe.malformed.isEmpty)
        var device = Device()
        device.homepageView("v1")
        #expect(device.next(recipe).message == nil)
        // The same view reporting itself again (FXIOS-9428) is not a second view (B1).
        device.now = device.now.addingTimeInterval(0.2)
        device.events.record("homepage_viewed", viewID: "v1", at: device.now)
        #expect(device.next(recipe).message == nil)
        device.homepageView("v2")
        let selection = device.next(recipe)
        let message = try #require(selection.message)
        #expect(message.key == "ios-homepage-csat-microsurvey-en")
        #expect(selection.trace.first?.triggers.map(\.result) == ["true", "true", "true"])
        let model = try MicrosurveyModel(message: message, strings: Fixtures.strings)
        #expect(model.promptTitle == "Help us make Firefox better. It only takes a minute.")
        #expect(model.promptButtonLabel == "Continue")
        #expect(model.question == "How satisfied are you with your Firefox homepage?")
        #expect(model.options == ["Very satisfied", "Satisfied", "Neutral", "Dissatisfied", "Very dissatisfied", "I don't use it"])
        #expect(model.icon == "homeLarge")
        #expect(model.privacyURL == "https://www.mozilla.org/en-US/privacy/firefox/?utm_medium=firefox-mobile&utm_source=modal&utm_campaign=microsurvey&utm_content=homepage")
    }

    @Test func theRecipeWaitsForADayAfterInstallAndForEnglish() throws {
        let recipe = try Fixtures.recipe(Fixtures.mvpMicrosurveyRecipe)
        var device = Device()
        device.context.installationDate = device.now.addingTimeInterval(-3600)
        device.context.updateDate = device.context.installationDate
        device.homepageView("a")
        device.homepageView("b")
        let trace = device.next(recipe).trace.first
        #expect(trace?.outcome == "not_eligible")
        #expect(trace?.triggers.map(\.result) == ["true", "false", "true"])
        var german = Device()
        german.context.locale = "de-DE"
        german.homepageView("a")
        german.homepageView("b")
        #expect(german.next(recipe).message == nil)
    }

    /// B5, B17: submitting records `submit_button_tapped` and `messaging.completed`, never `messaging.dismissed`, and the
    /// message never comes back, even with a large `max-display-count`.
    @Test func aSubmittedSurveyIsCompletedNotDismissedAndNeverReturns() throws {
        let text = Fixtures.mvpMicrosurveyRecipe.replacingOccurrences(of: "\"style\": \"MICROSURVEY\"", with: "\"style\": \"FALLBACK\"")
        let recipe = try Fixtures.recipe(text)
        var device = Device()
        device.homepageView("a")
        device.homepageView("b")
        let message = try #require(device.next(recipe).message)
        var flow = MicrosurveyFlow(model: try MicrosurveyModel(message: message, strings: Fixtures.strings))
        var recorded: [String] = []
        func run(_ input: MicrosurveyFlow.Input) throws {
            for effect in try flow.handle(input) {
                switch effect {
                case .messageDisplayed: recorded += device.store.displayed(message, sessionID: device.session, at: device.now).map(\.description)
                case .messageClicked: recorded += device.store.clicked(message).map(\.description)
                case .messageDismissed: recorded += device.store.dismissed(message).map(\.description)
                case .messageCompleted: recorded += device.store.completed(message).map(\.description)
                case .record(let event): recorded.append(event.description)
                case .open: break
                }
            }
        }
        try run(.showPrompt)
        try run(.continueToSurvey)
        try run(.surveyAppeared)
        #expect(throws: MessagingError.self) { try flow.handle(.submit) }  // nothing selected yet
        try run(.select("Neutral"))
        try run(.submit)
        try run(.confirmationViewed)
        try run(.closeSurvey)
        #expect(flow.step == .finished(.completed))
        #expect(recorded == ["messaging.shown", "messaging.clicked", "microsurvey.shown", "microsurvey.submit_button_tapped",
                             "messaging.completed", "microsurvey.confirmation_shown"])
        #expect(!recorded.contains("messaging.dismissed"))
        // A later session, more views: it does not come back (FALLBACK allows 20 displays).
        device.session = "s2"
        device.homepageView("c")
        #expect(device.next(recipe).message == nil)
        #expect(device.next(recipe).trace.first?.outcome == "expired")
        #expect(device.store.state(message).isInteractedWith && device.store.state(message).completed)
    }

    /// B3: every close path ends with exactly one terminal event.
    @Test(arguments: [
        ([MicrosurveyFlow.Input.showPrompt, .closePrompt], ["messaging.dismissed"]),
        ([.showPrompt, .continueToSurvey, .surveyAppeared, .closeSurvey], ["microsurvey.dismiss_button_tapped", "messaging.dismissed"]),
        ([.showPrompt, .continueToSurvey, .sheetDismissedByDrag, .closePrompt], ["messaging.dismissed"]),
        ([.showPrompt, .continueToSurvey, .select("Neutral"), .submit, .closeSurvey], ["microsurvey.submit_button_tapped", "messaging.completed"]),
    ])
    func everyClosePathEndsOnce(_ inputs: [MicrosurveyFlow.Input], _ terminal: [String]) throws {
        let recipe = try Fixtures.recipe(Fixtures.mvpMicrosurveyRecipe)
        let message = try #require(recipe.messages.first)
        var store = MessageStore()
        var flow = MicrosurveyFlow(model: try MicrosurveyModel(message: message, strings: Fixtures.strings))
        var names: [String] = []
        for input in inputs {
            for effect in try flow.handle(input) {
                switch effect {
                case .messageDisplayed: names += store.displayed(message, sessionID: "s", at: Date()).map(\.description)
                case .messageClicked: names += store.clicked(message).map(\.description)
                case .messageDismissed: names += store.dismissed(message).map(\.description)
                case .messageCompleted: names += store.completed(message).map(\.description)
                case .record(let event): names.append(event.description)
                case .open: break
                }
            }
        }
        let terminalNames: Set<String> = ["messaging.dismissed", "messaging.completed"]
        #expect(names.filter { terminalNames.contains($0) }.count == 1)
        #expect(terminal.allSatisfy(names.contains))
        if case .finished = flow.step {} else { Issue.record("not finished: \(flow.step)") }
        #expect(store.state(message).isInteractedWith)
        #expect(throws: MessagingError.self) { try flow.handle(.showPrompt) }
    }

    @Test func theMicrosurveyStyleExpiresAtItsFirstDisplayAndReportsExpiredFirst() throws {
        let recipe = try Fixtures.recipe(Fixtures.mvpMicrosurveyRecipe)
        let message = try #require(recipe.messages.first)
        var store = MessageStore()
        #expect(store.displayed(message, sessionID: "s", at: Date()).map(\.description) == ["messaging.expired", "messaging.shown"])
        // Shown again in the same session: no new impression, no second expiry.
        #expect(store.displayed(message, sessionID: "s", at: Date()).map(\.description) == ["messaging.shown"])
        #expect(store.state(message).impressions == 1)
        #expect(store.isExpired(message))
    }

    @Test func defaultOptionsAndTheRequiredQuestion() throws {
        let recipe = try Fixtures.recipe("""
            {"messages": {"m": {"surface": "microsurvey", "style": "MICROSURVEY", "text": "Q?"},
                          "blank": {"surface": "microsurvey", "style": "MICROSURVEY", "text": ""}}}
            """)
        let message = try #require(recipe.messages.first { $0.key == "m" })
        let model = try MicrosurveyModel(message: message, strings: Fixtures.strings)
        #expect(model.options.count == 6)
        #expect(model.options.first == "Very dissatisfied")
        #expect(model.promptTitle == "Help us make Firefox better. It only takes a minute.")
        #expect(!model.privacyURL.contains("utm_content"))
        #expect(recipe.malformed.map(\.key) == ["blank"])
    }
}

@Suite struct RecipeValidationTests {
    /// B12: the docs' `"trigger"` is an error, not a message that silently targets everyone; a missing trigger list is
    /// the explicit default, noted.
    @Test func unknownKeysAreErrorsAndMissingTriggersAreNoted() throws {
        let recipe = try Fixtures.recipe("""
            {"messages": {"docs-style": {"text": "Hi", "surface": "new-tab-card", "trigger": ["NEVER"]},
                          "no-triggers": {"text": "Hi", "surface": "new-tab-card"}}}
            """)
        #expect(recipe.malformed.map(\.key) == ["docs-style"])
        #expect(recipe.malformed.first?.reason.contains("did you mean `trigger-if-all`") == true)
        #expect(recipe.messages.map(\.key) == ["no-triggers"])
        #expect(recipe.messages.first?.triggers.map(\.name) == ["ALWAYS"])
        #expect(recipe.notes.contains { $0.contains("no-triggers") && $0.contains("[ALWAYS]") })
        #expect(throws: MessagingError.self) { try Fixtures.recipe(#"{"mesages": {}}"#) }
    }

    /// §1.4 rules, and B7: a trigger the real engine cannot parse is reported at load time with its position.
    @Test func createMessageRules() throws {
        let recipe = try Fixtures.recipe("""
            {"triggers": {"NOT_DEFAULT": "!is_default_browser"},
             "messages": {
               "empty-text": {"text": "", "surface": "new-tab-card"},
               "bad-action": {"text": "x", "action": "NOT_AN_ACTION", "surface": "new-tab-card"},
               "bad-style": {"text": "x", "style": "LOUD", "surface": "new-tab-card"},
               "bad-trigger": {"text": "x", "trigger-if-all": ["NO_SUCH_TRIGGER"], "surface": "new-tab-card"},
               "bang": {"text": "x", "trigger-if-all": ["NOT_DEFAULT"], "surface": "new-tab-card"},
               "wrong-type": {"text": 5, "surface": "new-tab-card"},
               "control-no-experiment": {"is-control": true, "surface": "new-tab-card"},
               "ok-url": {"text": "x", "action": "https://example.com/{uuid}", "surface": "new-tab-card"},
               "ok-control": {"is-control": true, "experiment": "exp", "text": "", "surface": "new-tab-card"}
             }}
            """)
        let reasons = Dictionary(uniqueKeysWithValues: recipe.malformed.map { ($0.key, $0.reason) })
        #expect(Set(reasons.keys) == ["empty-text", "bad-action", "bad-style", "bad-trigger", "bang", "wrong-type", "control-no-experiment"])
        #expect(reasons["bang"]?.contains("column 1") == true)
        #expect(reasons["bang"]?.contains("unary `!`") == true)
        #expect(Set(recipe.messages.map(\.key)) == ["ok-url", "ok-control"])
        #expect(recipe.messages.first { $0.key == "ok-control" }?.action == "CONTROL_ACTION")
    }

    /// B20: a trigger querying an event the app never records is flagged when the recipe loads.
    @Test func triggersOnUnknownEventsAreFlagged() throws {
        let recipe = try Fixtures.recipe(#"{"triggers": {"OPENED": "'events.app_opened'|eventCountNonZero('Days', 28, 0) > 0"}}"#)
        #expect(recipe.notes.contains { $0.contains("events.app_opened") })
    }

    /// Every trigger Firefox ships parses and evaluates (FXI's `testTriggers`, copied).
    @Test func everyShippedTriggerEvaluates() {
        let context = TargetingContext(installationDate: utc("2026-06-01T00:00:00Z"))
        let helper = TargetingHelper(context: context.attributes(now: utc("2026-06-10T00:00:00Z")), now: utc("2026-06-10T00:00:00Z"))
        for (name, expression) in FirefoxMessagingDefaults.triggers {
            #expect(TargetingHelper.validate(expression) == nil, "\(name)")
            #expect((try? helper.evaluate(expression)) != nil, "\(name): \(expression)")
        }
    }
}

@Suite struct SelectionTests {
    static let twoFallbacks = """
        {"messages": {
          "zeta": {"text": "z", "surface": "new-tab-card", "style": "DEFAULT"},
          "alpha": {"text": "a", "surface": "new-tab-card", "style": "DEFAULT"},
          "urgent": {"text": "u", "surface": "new-tab-card", "style": "URGENT", "trigger-if-all": ["NEVER"]},
          "warning": {"text": "w", "surface": "new-tab-card", "style": "WARNING", "except-if-any": ["I_AM_NOT_DEFAULT_BROWSER"]},
          "elsewhere": {"text": "e", "surface": "notification", "style": "URGENT"}
        }}
        """

    /// B19: equal priorities come out in key order, every time.
    @Test func tiesBreakByKeyAndPriorityComesFirst() throws {
        let recipe = try Fixtures.recipe(Self.twoFallbacks)
        var device = Device()
        for _ in 0..<5 {
            var copy = device
            #expect(copy.next(recipe, surface: "new-tab-card").message?.key == "alpha")
        }
        let trace = device.next(recipe, surface: "new-tab-card").trace
        #expect(trace.map(\.key) == ["elsewhere", "urgent", "warning", "alpha", "zeta"])
        #expect(trace.map(\.outcome) == ["other_surface", "not_eligible", "not_eligible", "selected", "not_reached"])
        device.context.isDefaultBrowser = true
        #expect(device.next(recipe, surface: "new-tab-card").message?.key == "warning")
    }

    @Test func anExpressionErrorMakesAMessageIneligibleNotFatal() throws {
        let recipe = try Fixtures.recipe("""
            {"triggers": {"NEEDS_ATTR": "missing_attribute == 1"},
             "messages": {"a": {"text": "a", "surface": "s", "trigger-if-all": ["NEEDS_ATTR"], "style": "URGENT"},
                          "b": {"text": "b", "surface": "s"}}}
            """)
        var device = Device()
        let selection = device.next(recipe, surface: "s")
        #expect(selection.message?.key == "b")
        #expect(selection.trace.first?.triggers.first?.result.hasPrefix("error:") == true)
    }

    /// B11: state is per (experiment, key): a new experiment reusing a key starts with fresh counts.
    @Test func aNewExperimentReusingAKeyStartsFresh() throws {
        func recipe(_ slug: String) throws -> MessagingRecipe {
            try Fixtures.recipe(#"{"messages": {"card": {"text": "x", "surface": "s", "experiment": "\#(slug)"}}}"#)
        }
        var device = Device()
        let first = try #require(try recipe("exp-1").messages.first)
        _ = device.store.dismissed(first)
        #expect(device.next(try recipe("exp-1"), surface: "s").message == nil)
        #expect(device.next(try recipe("exp-2"), surface: "s").message?.key == "card")
    }

    /// B22: a control message is counted (impression and exposure) and then either the next message or nothing shows.
    @Test(arguments: ["show-next-message", "show-none"])
    func controlMessagesAreCountedThenFollowOnControl(_ behavior: String) throws {
        let recipe = try Fixtures.recipe("""
            {"on-control": "\(behavior)",
             "messages": {"ctl": {"is-control": true, "experiment": "exp", "surface": "s", "style": "URGENT"},
                          "treatment": {"text": "t", "surface": "s"}}}
            """)
        var device = Device()
        let selection = MessageSelector.next(for: "s", recipe: recipe, store: &device.store, helper: device.helper, sessionID: "s1",
                                             now: device.now, enrollments: ["exp": "control"])
        #expect(selection.message?.key == (behavior == "show-none" ? nil : "treatment"))
        #expect(selection.events.map(\.description) == ["nimbus_events.exposure"])
        #expect(selection.events.first?.extra == ["experiment": "exp", "branch": "control", "feature_id": "messaging"])
        #expect(device.store.state(recipe.messages.first { $0.key == "ctl" }!).impressions == 1)
    }
}

@Suite struct ActionTests {
    @Test func actionURLsGetTheSchemeAUUIDAndParams() throws {
        let built = try ActionURL.build("://deep-link?url=settings/fxa", params: ["entrypoint": "{app_name}-{uuid}", "q": "a b&c"],
                                        context: ["app_name": "firefox"], scheme: "firefox", makeUUID: { "11111111-2222" })
        #expect(built.url == "firefox://deep-link?url=settings/fxa&entrypoint=firefox-11111111-2222&q=a%20b%26c")
        #expect(built.uuid == "11111111-2222")
        let survey = try ActionURL.build("https://survey.example/?id={uuid}&v={unknown}&n={number_of_app_launches}",
                                         context: ["number_of_app_launches": 3], scheme: "firefox", makeUUID: { "u-1" })
        #expect(survey.url == "https://survey.example/?id=u-1&v={unknown}&n=3")
        let plain = try ActionURL.build("://share-sheet", scheme: "firefox", makeUUID: { "x" })
        #expect(plain.uuid == nil)
        #expect(throws: MessagingError.self) { try ActionURL.build("not a url", scheme: "firefox", makeUUID: { "x" }) }
    }

    @Test func deepLinksParseIntoTypedActions() {
        #expect(DeepLink.parse("firefox://deep-link?url=settings/fxa") == .settings("fxa"))
        #expect(DeepLink.parse("://deep-link?url=homepanel/bookmarks") == .homePanel("bookmarks"))
        #expect(DeepLink.parse("firefox://deep-link?url=/history") == .homePanel("history"))
        #expect(DeepLink.parse("firefox://deep-link?url=settings") == .settings("general"))
        #expect(DeepLink.parse("firefox://deep-link?url=settings/clear-private-data") == .settings("clear-private-data"))
        #expect(DeepLink.parse("://deep-link?url=default-browser/tutorial") == .defaultBrowser("tutorial"))
        #expect(DeepLink.parse("firefox://open-url?url=https://mozilla.org") == .openURL("https://mozilla.org"))
        #expect(DeepLink.parse("://share-sheet") == .shareSheet)
        #expect(DeepLink.parse("firefox://deep-link?url=nowhere/x") == .unknown("firefox://deep-link?url=nowhere/x"))
        #expect(DeepLink.parse("https://example.com") == nil)
        // Every shipped action parses to a known action.
        for (name, url) in FirefoxMessagingDefaults.actions {
            if case .unknown = DeepLink.parse(url) { Issue.record("\(name) → unknown") }
        }
    }
}

@Suite struct ContextTests {
    /// B13: `date_string` is `yyyy-MM-dd` (not minutes), in the time zone asked for.
    @Test func dateStringIsADateInTheGivenZone() {
        let context = TargetingContext(locale: "en-CA", installationDate: utc("2026-12-20T00:00:00Z"))
        let now = utc("2026-12-25T03:30:00Z")
        let attributes = context.attributes(now: now)
        #expect(attributes["date_string"] == "2026-12-25")
        #expect(context.attributes(now: now, timeZone: TimeZone(identifier: "America/Los_Angeles")!)["date_string"] == "2026-12-24")
        #expect(attributes["language"] == "en" && attributes["region"] == "CA")
        #expect(attributes["days_since_install"] == 5)
        #expect((try? TargetingHelper(context: attributes, now: now).evaluate("'-12-25' in date_string")) == true)
        // Whole 24-hour periods: 23 h after install is day 0.
        #expect(context.attributes(now: utc("2026-12-20T23:00:00Z"))["days_since_install"] == 0)
    }
}
