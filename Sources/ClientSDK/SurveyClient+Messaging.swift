import Foundation
import Messaging
import SurveyWire
import Transport

/// In-app messaging on the device: the behavioural event store, message selection and state, and microsurveys — each
/// state change saved to disk, each event recorded through the telemetry pipeline. The recipe is the `messaging`
/// feature (``SurveyClient/refreshFeatures()``) merged over Firefox's shipped styles, actions and triggers.
extension SurveyClient {
    var messagingDirectory: URL { configuration.storageDirectory.appendingPathComponent("messaging", isDirectory: true) }
    var featuresURL: URL { messagingDirectory.appendingPathComponent("features.json") }
    var eventStoreURL: URL { messagingDirectory.appendingPathComponent("events.json") }
    var messageStoreURL: URL { messagingDirectory.appendingPathComponent("messages.json") }

    func ensureMessagingDirectory() {
        try? FileManager.default.createDirectory(at: messagingDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    // MARK: Behavioural events

    /// The behavioural event store (Nimbus's), as saved. Internal: targeting reads it through ``nextMessage(for:context:)``.
    var eventStore: EventStore {
        if cachedEventStore == nil { cachedEventStore = files.read(EventStore.self, from: eventStoreURL) ?? EventStore() }
        return cachedEventStore ?? EventStore()
    }

    /// The behavioural events recorded so far (their ids, sorted): what targeting expressions count.
    public var recordedBehaviors: [String] { eventStore.eventIDs }

    /// Records a behavioural event for targeting (`homepage_viewed`, `app_cycle.foreground`, ...) and saves the store.
    /// With a `viewID`, the same view reporting twice within a short window counts once (bug B1).
    /// - Returns: false when the event was ignored as a repeat.
    /// - Throws: `closed` after ``close()`` (nothing is recorded: the directory is no longer this client's).
    @discardableResult
    public func recordBehavior(_ eventID: String, count: UInt64 = 1, viewID: String? = nil) throws(SurveyClientError) -> Bool {
        guard !isClosed else { throw .closed }
        var store = eventStore
        let counted = store.record(eventID, count: count, viewID: viewID, at: now())
        cachedEventStore = store
        ensureMessagingDirectory()
        do { try files.write(store, to: eventStoreURL) } catch { logger.warning("event store not saved", metadata: ["error": "\(error)"]) }
        return counted
    }

    // MARK: Messages

    /// Per-message display state, as saved. Internal: selection and the `message…` calls keep it.
    var messageStore: MessageStore {
        if cachedMessageStore == nil { cachedMessageStore = files.read(MessageStore.self, from: messageStoreURL) ?? MessageStore() }
        return cachedMessageStore ?? MessageStore()
    }

    func saveMessageStore(_ store: MessageStore) {
        cachedMessageStore = store
        ensureMessagingDirectory()
        do { try files.write(store, to: messageStoreURL) } catch { logger.warning("message store not saved", metadata: ["error": "\(error)"]) }
    }

    /// The `messaging` recipe: the server's value merged over `defaults` (Firefox's shipped styles, actions and triggers
    /// by default), validated. Each malformed message is reported once (`messaging.malformed`).
    func messagingRecipe(defaults: JSONValue = FirefoxMessagingDefaults.feature,
                         knownEvents: Set<String>? = FirefoxMessagingDefaults.eventIDs) throws(SurveyClientError) -> MessagingRecipe {
        guard !isClosed else { throw .closed }
        let recipe: MessagingRecipe
        do throws(MessagingError) {
            recipe = try MessagingRecipe(feature: featureJSON("messaging", defaults: defaults), knownEvents: knownEvents)
        } catch {
            throw SurveyClientError(code: error.code, message: error.message)
        }
        for bad in recipe.malformed where !reportedMalformed.contains(bad.key) {
            reportedMalformed.insert(bad.key)
            logger.warning("malformed message", metadata: ["key": "\(bad.key)", "reason": "\(bad.reason)"])
            record(category: "messaging", name: "malformed", extra: ["message_key": bad.key, "message_surface": bad.surface])
        }
        for note in recipe.notes where !reportedMalformed.contains(note) {
            reportedMalformed.insert(note)
            logger.info("messaging recipe", metadata: ["note": "\(note)"])
        }
        return recipe
    }

    /// The message to show on `surface` now, given what the app knows (`context`), and how each message of the surface
    /// fared. Control messages met on the way are counted and their exposure recorded.
    /// - Throws: `closed`, or the recipe's code (`wrong_type`, `unknown_key`, ...) when the served `messaging` feature is not
    ///   a recipe.
    public func nextMessage(for surface: String, context: AppContext) throws(SurveyClientError) -> MessageChoice {
        guard !isClosed else { throw .closed }
        return MessageChoice(try select(for: surface, context: context.targeting, recipe: messagingRecipe()))
    }

    /// Messaging's selection against `recipe`, its bookkeeping saved and its events recorded.
    func select(for surface: String, context: TargetingContext, recipe: MessagingRecipe) -> MessageSelection {
        let helper = TargetingHelper(context: context.attributes(now: now()), events: eventStore, now: now())
        var store = messageStore
        var enrollments: [String: String] = [:]
        for enrollment in features?.enrollments ?? [] { enrollments[enrollment.slug] = enrollment.branch }
        let selection = MessageSelector.next(for: surface, recipe: recipe, store: &store, helper: helper, sessionID: sessionID,
                                             now: now(), enrollments: enrollments)
        if !selection.events.isEmpty { saveMessageStore(store) }
        for event in selection.events { record(category: event.category, name: event.name, extra: event.extra) }
        return selection
    }

    /// The app showed `message`: an impression (once per session), `messaging.expired` if that reached the cap,
    /// `messaging.shown`, and the experiment exposure.
    /// - Throws: `closed` after ``close()``.
    public func messageDisplayed(_ shown: InAppMessage) throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
        let message = shown.message
        var store = messageStore
        var events = store.displayed(message, sessionID: sessionID, at: now())
        if let slug = message.data.experiment, let branch = features?.branch(of: slug) {
            events.append(MessagingEvent("nimbus_events", "exposure", ["experiment": slug, "branch": branch, "feature_id": "messaging"]))
        }
        apply(store, events)
    }

    /// The user pressed `message`: what it opens (its action URL, with `{uuid}` and `action-params` filled in from
    /// `context`), and `messaging.clicked` with the `action_uuid`. Nil when the message has no action.
    /// - Throws: `closed`, or `malformed_action` for an action that does not make a URL (recorded as `messaging.malformed`).
    @discardableResult
    public func messageClicked(_ clicked: InAppMessage, context: AppContext, scheme: String = "firefox") throws(SurveyClientError) -> InAppMessage.Action? {
        guard !isClosed else { throw .closed }
        let message = clicked.message
        var built: InAppMessage.Action?
        if let action = message.action, !message.isControl {
            do throws(MessagingError) {
                let url = try ActionURL.build(action, params: message.data.actionParams, context: context.targeting.attributes(now: now()),
                                              scheme: scheme, makeUUID: { UUID().uuidString.lowercased() })
                built = InAppMessage.Action(url: url.url, uuid: url.uuid)
            } catch {
                record(category: "messaging", name: "malformed", extra: ["message_key": message.key, "message_surface": message.surface])
                throw SurveyClientError(code: error.code, message: error.message)
            }
        }
        var store = messageStore
        let events = store.clicked(message, actionUUID: built?.uuid)
        apply(store, events)
        return built
    }

    /// The user closed `message`.
    /// - Throws: `closed` after ``close()``.
    public func messageDismissed(_ message: InAppMessage) throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
        var store = messageStore
        let events = store.dismissed(message.message)
        apply(store, events)
    }

    /// The user did what `message` asked (our explicit terminal state, apart from dismissal).
    /// - Throws: `closed` after ``close()``.
    public func messageCompleted(_ message: InAppMessage) throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
        var store = messageStore
        let events = store.completed(message.message)
        apply(store, events)
    }

    func apply(_ store: MessageStore, _ events: [MessagingEvent]) {
        saveMessageStore(store)
        for event in events { record(category: event.category, name: event.name, extra: event.extra) }
    }

    /// A microsurvey made from `message`: its prompt, question and options resolved through the app's string tables
    /// (`Table/Key` ids; `%@` in titles becomes `appName`). Nothing is recorded until it is moved on.
    /// - Throws: `closed`, or `malformed_message` when the message has no question (`text`).
    public func microsurvey(for message: InAppMessage, strings: [String: [String: String]] = [:],
                            appName: String = "Firefox") throws(SurveyClientError) -> Microsurvey {
        guard !isClosed else { throw .closed }
        do throws(MessagingError) {
            let model = try MicrosurveyModel(message: message.message, strings: StringTables(strings, appName: appName))
            return Microsurvey(flow: MicrosurveyFlow(model: model), message: message)
        } catch {
            throw SurveyClientError(code: error.code, message: error.message)
        }
    }

    /// Moves `survey` on with `input`: saves the message state it changes and records its telemetry.
    /// - Returns: the survey after the input, and URLs the app should open (the privacy notice).
    /// - Throws: `invalid_transition` for an input the survey cannot take now (submit without an option, ...); `closed`.
    public func microsurvey(_ survey: Microsurvey, _ input: Microsurvey.Input) throws(SurveyClientError) -> (Microsurvey, [String]) {
        guard !isClosed else { throw .closed }
        var survey = survey
        let effects: [MicrosurveyFlow.Effect]
        do throws(MessagingError) {
            effects = try survey.flow.handle(input.flowInput)
        } catch {
            throw SurveyClientError(code: error.code, message: error.message)
        }
        let message = survey.message
        var urls: [String] = []
        for effect in effects {
            switch effect {
            case .messageDisplayed: try messageDisplayed(message)
            case .messageClicked:
                var store = messageStore
                let events = store.clicked(message.message)
                apply(store, events)
            case .messageDismissed: try messageDismissed(message)
            case .messageCompleted: try messageCompleted(message)
            case .record(let event): record(category: event.category, name: event.name, extra: event.extra)
            case .open(let url): urls.append(url)
            }
        }
        return (survey, urls)
    }
}
