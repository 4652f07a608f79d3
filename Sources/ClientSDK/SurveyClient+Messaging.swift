import Foundation
import Messaging
import SurveyWire
import Transport

/// In-app messaging on the device: feature values from the server (cached for offline use), the behavioural event
/// store, message selection and state, and microsurveys — each state change saved to disk, each event recorded
/// through the telemetry pipeline.
extension SurveyClient {
    var messagingDirectory: URL { configuration.storageDirectory.appendingPathComponent("messaging", isDirectory: true) }
    var featuresURL: URL { messagingDirectory.appendingPathComponent("features.json") }
    var eventStoreURL: URL { messagingDirectory.appendingPathComponent("events.json") }
    var messageStoreURL: URL { messagingDirectory.appendingPathComponent("messages.json") }

    func ensureMessagingDirectory() {
        try? FileManager.default.createDirectory(at: messagingDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    // MARK: Features

    /// Fetches this client's feature values (`GET /features/<app_id>?client_id=`) and keeps them as the last good copy.
    /// - Throws: `transport` or `features_failed`; the cached copy stays in use.
    @discardableResult
    public func refreshFeatures() async throws(SurveyClientError) -> FeatureValues {
        guard !isClosed else { throw .closed }
        guard let endpoint = configuration.featuresURL else {
            throw SurveyClientError(code: "features_unavailable", message: "no featuresURL is configured; the cached copy or the defaults serve")
        }
        let query = state.clientID.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? state.clientID
        let response: TransportResponse
        do {
            response = try await http.send(TransportRequest(url: "\(endpoint)/features/\(Self.sanitizedAppID(configuration.appID))?client_id=\(query)"))
        } catch {
            throw SurveyClientError(code: "transport", message: "features: \(error)")
        }
        guard response.status == 200, let features = try? response.decode(AdminWire.Features.self) else {
            throw SurveyClientError(code: "features_failed", message: "features answered \(response.status)", status: response.status)
        }
        ensureMessagingDirectory()
        try files.write(features, to: featuresURL)
        let values = FeatureValues(features)
        cachedFeatures = values
        return values
    }

    /// The last feature values fetched (nil before the first success).
    public var features: FeatureValues? {
        if cachedFeatures == nil { cachedFeatures = files.read(AdminWire.Features.self, from: featuresURL).map(FeatureValues.init) }
        return cachedFeatures
    }

    /// A feature's value in the app's own type: the server's value (the last good copy) merged over `defaults` (objects
    /// per field, maps per key, lists replaced, `null` deletes), as Nimbus merges a rollout over a feature's defaults;
    /// `defaults` itself when nothing was ever fetched.
    ///
    /// ```swift
    /// struct Onboarding: Codable { var title: String; var dismissable: Bool }
    /// let onboarding = try await client.featureValue("onboarding", defaults: Onboarding(title: "Hello", dismissable: true))
    /// ```
    /// - Throws: `feature_invalid` when the merged value is not a `Value` (a field of another type from the server: the
    ///   app then keeps its defaults, as Nimbus drops an invalid value); `closed`.
    public func featureValue<Value: Codable>(_ featureID: String, defaults: Value) throws(SurveyClientError) -> Value {
        guard !isClosed else { throw .closed }
        guard let value = features?.values[featureID] else { return defaults }
        do {
            let merged = FeatureMerge.merge(try WireJSON.decode(JSONValue.self, from: WireJSON.encode(defaults)), value)
            return try WireJSON.decode(Value.self, from: WireJSON.encode(merged))
        } catch {
            throw SurveyClientError(code: SurveyClientError.Code.featureInvalid.rawValue,
                                    message: "feature \(featureID) does not read as \(Value.self): \(error)")
        }
    }

    /// A feature's value as JSON (the server's merged over `defaults`), for the messaging recipe.
    func featureJSON(_ featureID: String, defaults: JSONValue) -> JSONValue {
        guard let value = features?.values[featureID] else { return defaults }
        return FeatureMerge.merge(defaults, value)
    }

    // MARK: Behavioural events

    /// The behavioural event store (Nimbus's), as saved. Internal: targeting reads it through ``nextMessage(for:context:recipe:)``.
    var eventStore: EventStore {
        if cachedEventStore == nil { cachedEventStore = files.read(EventStore.self, from: eventStoreURL) ?? EventStore() }
        return cachedEventStore ?? EventStore()
    }

    /// The behavioural events recorded so far (their ids, sorted): what targeting expressions count.
    public var recordedBehaviors: [String] { eventStore.eventIDs }

    /// Records a behavioural event for targeting (`homepage_viewed`, `app_cycle.foreground`, ...) and saves the store.
    /// With a `viewID`, the same view reporting twice within a short window counts once (bug B1).
    /// - Returns: false when the event was ignored as a repeat.
    @discardableResult
    public func recordBehavior(_ eventID: String, count: UInt64 = 1, viewID: String? = nil) -> Bool {
        // After `close()` nothing is recorded (the directory is no longer this client's).
        guard !isClosed else { return false }
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
    public func messagingRecipe(defaults: JSONValue = FirefoxMessagingDefaults.feature,
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

    /// The message to show on `surface` now, given the app's targeting `context`, or nil. Control messages met on the
    /// way are counted and their exposure recorded.
    public func nextMessage(for surface: String, context: TargetingContext, recipe given: MessagingRecipe? = nil) throws(SurveyClientError) -> MessageSelection {
        guard !isClosed else { throw .closed }
        let recipe: MessagingRecipe
        if let given { recipe = given } else { recipe = try messagingRecipe() }
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
    public func messageDisplayed(_ message: Message) {
        var store = messageStore
        var events = store.displayed(message, sessionID: sessionID, at: now())
        if let slug = message.data.experiment, let branch = features?.branch(of: slug) {
            events.append(MessagingEvent("nimbus_events", "exposure", ["experiment": slug, "branch": branch, "feature_id": "messaging"]))
        }
        apply(store, events)
    }

    /// The user pressed `message`: its action URL (with `{uuid}` and `action-params` filled in from `context`), and
    /// `messaging.clicked` with the `action_uuid`. Nil URL when the message has no action.
    @discardableResult
    public func messageClicked(_ message: Message, context: TargetingContext, scheme: String = "firefox") throws(SurveyClientError) -> ActionURL.Built? {
        guard !isClosed else { throw .closed }
        var built: ActionURL.Built?
        if let action = message.action, !message.isControl {
            do throws(MessagingError) {
                built = try ActionURL.build(action, params: message.data.actionParams, context: context.attributes(now: now()),
                                            scheme: scheme, makeUUID: { UUID().uuidString.lowercased() })
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
    public func messageDismissed(_ message: Message) {
        var store = messageStore
        let events = store.dismissed(message)
        apply(store, events)
    }

    /// The user did what `message` asked (our explicit terminal state, apart from dismissal).
    public func messageCompleted(_ message: Message) {
        var store = messageStore
        let events = store.completed(message)
        apply(store, events)
    }

    func apply(_ store: MessageStore, _ events: [MessagingEvent]) {
        saveMessageStore(store)
        for event in events { record(category: event.category, name: event.name, extra: event.extra) }
    }

    /// Advances a microsurvey: applies `input` to `flow`, saves the message state it changes, records its telemetry.
    /// - Returns: the flow after the input, and URLs the app should open (the privacy notice).
    /// - Throws: `invalid_transition` for an input the survey cannot take now (submit without an option, ...).
    public func microsurvey(_ flow: MicrosurveyFlow, _ input: MicrosurveyFlow.Input, message: Message) throws(SurveyClientError) -> (MicrosurveyFlow, [String]) {
        guard !isClosed else { throw .closed }
        var flow = flow
        let effects: [MicrosurveyFlow.Effect]
        do throws(MessagingError) {
            effects = try flow.handle(input)
        } catch {
            throw SurveyClientError(code: error.code, message: error.message)
        }
        var urls: [String] = []
        for effect in effects {
            switch effect {
            case .messageDisplayed: messageDisplayed(message)
            case .messageClicked:
                var store = messageStore
                let events = store.clicked(message)
                apply(store, events)
            case .messageDismissed: messageDismissed(message)
            case .messageCompleted: messageCompleted(message)
            case .record(let event): record(category: event.category, name: event.name, extra: event.extra)
            case .open(let url): urls.append(url)
            }
        }
        return (flow, urls)
    }
}
