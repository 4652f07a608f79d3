import Foundation
import Synchronization
import Logging
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// A participant's device: registers with a study server, holds the push relay link, keeps every pushed
/// survey's spec on disk until its answers are accepted, uploads answers in Beiwe's encrypted format,
/// and sends telemetry pings.
///
/// ```swift
/// let client = try SurveyClient(configuration: config)
/// try await client.start()
/// for await event in client.events { ... }
/// ```
/// State lives under the configuration's storage directory, so a client recreated on the same directory
/// (after a crash or restart) keeps its token, registration, stored surveys and unsent uploads.
public actor SurveyClient {
    /// Reported as the app and telemetry SDK version.
    public static let sdkVersion = "0.1.0"

    /// Events in the order they happen. One consumer; buffered until read.
    public nonisolated let events: AsyncStream<SurveyClientEvent>
    let continuation: AsyncStream<SurveyClientEvent>.Continuation

    let configuration: SurveyClientConfiguration
    /// Where requests go: the network, or a server in memory (tests).
    let http: any HTTPTransport
    /// The HTTP client this client made (and shuts down on `close()`); nil when it was given one.
    let ownedHTTP: TransportClient?
    let api: MobileAPI
    let files: ClientStore
    let logger: Logger
    let now: @Sendable () -> Date
    var state: ClientState {
        // Recording happens outside the actor: the event log follows the upload choice.
        didSet { eventLog.setRecording(isUploadEnabled) }
    }
    /// Where the push stream resumes (the last push handled), across its loops; each loop owns its connection machine.
    var resumePoint = StreamResumePoint()
    /// idle → starting → running → closed, and what `start()`, `stop()` and `close()` do in each.
    var lifecycle = ClientLifecycle()
    /// The client's loops (stream, heartbeat, retries, schedule, telemetry wake-ups), one of each kind, each owning its
    /// machine; driven by `run()`, or by their owner task.
    nonisolated let runtime = ClientRuntime()
    /// Fired by `close()` or by the cancellation of `run()`'s caller: `run()` then closes the client and returns.
    let closeRequest = OneShot()
    /// Fired when `close()` has finished (a second `close()` waits for it).
    let closed = OneShot()
    /// A `start()` under way: a second caller waits for it rather than minting a second token.
    var startTask: Task<Void, any Error>?
    /// Stored surveys' occurrence ids by survey id (nil until first needed).
    var storedIndex: [String: [String]]?
    /// Pushes of the live stream whose surveys are being fetched, or wait for a retry.
    var intake = PushIntake()
    /// Routes of our mock server the study server turned out not to have (Beiwe's), for this run.
    var routes = ServerRoutes()

    /// Whether the study server is known to lack `route`.
    func serverLacks(_ route: ServerRoutes.Route) -> Bool { routes.lacks(route) }

    /// Reads an answer of an optional route (remembering a missing one).
    func serverAnswered(_ route: ServerRoutes.Route, _ response: TransportResponse) -> ServerRoutes.Verdict {
        routes.answered(route, status: response.status, errorCode: MobileAPI.errorCode(response))
    }
    /// Answer files being uploaded (one upload per file at a time).
    var outbox = UploadOutbox()
    /// Telemetry events on disk, and how many wait in the open log.
    let eventLog: EventLog
    var eventsWaiting: Int { eventLog.openCount }
    /// Telemetry upload: the rate limiter, pings being sent, whether the endpoint lacks an ingestion route (pings then
    /// stay queued for the rest of this run) and whether a wake-up waits for a throttled window to end.
    var pingUploads: PingUploadMachine
    /// Passes waiting for the uploads in flight to end (`pause()` before its last walk of the queue).
    var pingUploadsSettled: [OneShot] = []
    /// The app session (foreground between start/resume and pause/stop): its id, start and number.
    var session = SessionMachine(id: UUID().uuidString.lowercased())
    /// Identifies the current session (message impressions count once per session).
    var sessionID: String { session.id }
    /// Messaging state read from disk once, then kept in step with what is written.
    var cachedFeatures: FeatureValues?
    var cachedEventStore: EventStore?
    var cachedMessageStore: MessageStore?
    /// Malformed messages and recipe notes already reported.
    var reportedMalformed: Set<String> = []

    /// Creates a client and loads its stored state. Throws `storage` when the directory is unusable.
    /// - Parameters:
    ///   - configuration: the study server, where pushes come from, the storage directory and the credentials.
    ///   - connections: connections shared with other clients of the process (many simulated devices); the client makes
    ///     its own when nil.
    ///   - logger: where the client logs (label `survey-sdk` by default).
    ///   - now: the device clock.
    public init(configuration: SurveyClientConfiguration, connections: SharedConnections? = nil, logger: Logger = Logger(label: "survey-sdk"),
                now: @escaping @Sendable () -> Date = { Date() }) throws(SurveyClientError) {
        let owned = connections == nil ? TransportClient() : nil
        try self.init(configuration: configuration, transport: connections?.transport ?? owned!, owning: owned, logger: logger, now: now)
    }

    /// Creates a client whose requests go through `transport` (a server kept in memory, in the SDK's own tests).
    init(configuration: SurveyClientConfiguration, transport: any HTTPTransport, owning owned: TransportClient? = nil,
         logger: Logger = Logger(label: "survey-sdk"), now: @escaping @Sendable () -> Date = { Date() }) throws(SurveyClientError) {
        self.configuration = configuration
        self.http = transport
        self.ownedHTTP = owned
        self.api = MobileAPI(client: http, configuration: configuration)
        self.files = try ClientStore(root: configuration.storageDirectory, logger: logger)
        self.logger = logger
        self.now = now
        if var stored = files.read(ClientState.self, from: files.stateURL) {
            // Not registered yet: the credentials are the configuration's, whatever an earlier failed attempt kept (a
            // retry with a corrected password in the same directory works).
            if !stored.registered { stored.passwordHash = BeiwePassword.deviceHash(configuration.temporaryPassword) }
            state = stored
        } else {
            state = ClientState(deviceID: configuration.deviceID ?? UUID().uuidString.lowercased(),
                                passwordHash: BeiwePassword.deviceHash(configuration.temporaryPassword),
                                clientID: UUID().uuidString.lowercased())
        }
        eventLog = try EventLog(directory: configuration.storageDirectory.appendingPathComponent("telemetry"))
        // Batches already made into pings (a crash came before their log was deleted) go; events an older version
        // kept in the state move to the log.
        eventLog.dropSealed(before: state.pingSeq)
        for event in state.pendingEvents { _ = try eventLog.append(event) }
        if !state.pendingEvents.isEmpty {
            state.pendingEvents = []
            try files.write(state, to: files.stateURL)
        }
        pingUploads = PingUploadMachine(limit: configuration.telemetry.pingsPerInterval, interval: configuration.telemetry.rateInterval)
        // Bounded: an app that never reads the events loses the oldest, not its memory.
        (events, continuation) = AsyncStream<SurveyClientEvent>.makeStream(bufferingPolicy: .bufferingNewest(max(1, configuration.eventBufferLimit)))
        // (The actor's `isUploadEnabled` is not reachable from its initializer.)
        eventLog.setRecording(state.uploadEnabled ?? configuration.telemetry.uploadEnabled)
        runtime.install(Self.loops(of: self))
    }

    /// Events kept by default for a consumer that has not read them yet (the oldest are dropped past it); see
    /// ``SurveyClientConfiguration/eventBufferLimit``.
    public static let eventBufferLimit = 10_000

    deinit {
        // A client dropped without `close()`: its loops hold it only during a call, and end with it.
        runtime.shutdown()
        closeRequest.fire()
        continuation.finish()
    }

    // MARK: Queries

    /// Surveys stored and not yet answered, oldest first.
    public func pendingSurveys() -> [StoredSurvey] {
        // A survey whose answers wait in the upload outbox is being submitted: it is not shown again.
        let submitting = submittingSurveyIDs()
        return files.list(StoredSurvey.self, in: files.surveysURL).map(\.1).filter { !submitting.contains($0.surveyID) }
            .sorted { $0.receivedAt < $1.receivedAt }
    }

    /// Surveys whose answers wait in the upload outbox ("submitting").
    func submittingSurveyIDs() -> Set<String> {
        Set(files.list(PendingUpload.self, in: files.uploadsURL).map(\.1.surveyID))
    }

    /// The relay token in use.
    public var pushToken: String? { state.relayToken }

    /// What the client holds right now (for `survey-cli device status` and tests).
    public func status() -> SurveyClientStatus {
        SurveyClientStatus(registered: state.registered, studyID: state.studyID, pushToken: state.relayToken,
                           pendingSurveys: pendingSurveys().map(\.surveyID),
                           uploadsWaiting: files.list(PendingUpload.self, in: files.uploadsURL).count,
                           pingsWaiting: files.count(in: files.pingsURL) + files.count(in: files.deletionRequestsURL),
                           eventsWaiting: eventsWaiting, quarantined: files.quarantined(), pingsDropped: state.droppedPings ?? [:],
                           uploadEnabled: isUploadEnabled, receiptsWaiting: state.pendingReceipts?.count ?? 0,
                           scheduling: state.scheduling)
    }
    /// True once `/register_user` succeeded.
    public var isRegistered: Bool { state.registered }
    /// The telemetry client id.
    public var clientID: String { state.clientID }

    // MARK: Helpers

    func save() throws(SurveyClientError) {
        try files.write(state, to: files.stateURL)
    }

    func emit(_ event: SurveyClientEvent) {
        continuation.yield(event)
    }
}
