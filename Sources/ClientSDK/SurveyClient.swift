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
    private let continuation: AsyncStream<SurveyClientEvent>.Continuation

    let configuration: SurveyClientConfiguration
    /// Where requests go: the network, or a server in memory (tests).
    let http: any HTTPTransport
    /// The HTTP client this client made (and shuts down on `close()`); nil when it was given one.
    private let ownedHTTP: TransportClient?
    let api: MobileAPI
    let files: ClientStore
    let logger: Logger
    let now: @Sendable () -> Date
    var state: ClientState {
        // Recording happens outside the actor: the event log follows the upload choice.
        didSet { eventLog.setRecording(isUploadEnabled) }
    }
    private var streamTask: BackgroundJob?
    /// The push stream's connection loop (connect, read, back off, renew a token that is gone) and its resume point.
    private var pushStream = PushStreamMachine()
    /// idle → running → closed.
    private var lifecycle = ClientLifecycle()
    /// Every background task below runs in this one task group (driven by `run()`, or by its owner task).
    let background = BackgroundTasks()
    /// Fired by `close()` or by the cancellation of `run()`'s caller: `run()` then closes the client and returns.
    private let closeRequest = OneShot()
    /// A `start()` under way: a second caller waits for it rather than minting a second token.
    private var startTask: Task<Void, any Error>?
    /// Stored surveys' occurrence ids by survey id (nil until first needed).
    private var storedIndex: [String: [String]]?
    /// Pushes of the live stream whose surveys are being fetched, or wait for a retry.
    private var intake = PushIntake()
    /// Routes of our mock server the study server turned out not to have (Beiwe's), for this run.
    private var routes = ServerRoutes()

    /// Whether the study server is known to lack `route`.
    func serverLacks(_ route: ServerRoutes.Route) -> Bool { routes.lacks(route) }

    /// Reads an answer of an optional route (remembering a missing one).
    func serverAnswered(_ route: ServerRoutes.Route, _ response: TransportResponse) -> ServerRoutes.Verdict {
        routes.answered(route, status: response.status, errorCode: MobileAPI.errorCode(response))
    }
    /// Answer files being uploaded (one upload per file at a time).
    private var outbox = UploadOutbox()
    private var localScheduleTask: BackgroundJob?
    /// Fetch retries of app-handed pushes (no relay stream to run them).
    private var intakeRetryTask: BackgroundJob?
    /// Retries the upload and ping outboxes with backoff while they are not empty.
    private var uploadRetryTask: BackgroundJob?
    private var heartbeatTask: BackgroundJob?
    /// Telemetry events on disk, and how many wait in the open log.
    let eventLog: EventLog
    var eventsWaiting: Int { eventLog.openCount }
    /// Telemetry upload: the rate limiter, pings being sent, and the wake-up at the end of a throttled window.
    var pingLimiter: PingRateLimiter
    var pingsInFlight: Set<String> = []
    /// The telemetry endpoint answered 404/405: it has no ingestion route; pings stay queued for the rest of this run.
    var telemetryRouteMissing = false
    var pingWaitTask: BackgroundJob?
    /// An `events` ping made because the batch filled up (`max_capacity`).
    var batchTask: BackgroundJob?
    /// The app session (foreground between start/resume and pause/stop), and its MMA heartbeat.
    var sessionActive = false
    var sessionStarted: Date?
    var sessionHeartbeatTask: BackgroundJob?
    /// Identifies the current session (message impressions count once per session).
    var sessionID = UUID().uuidString.lowercased()
    /// Messaging state read from disk once, then kept in step with what is written.
    var cachedFeatures: AdminWire.Features?
    var cachedEventStore: EventStore?
    var cachedMessageStore: MessageStore?
    /// Malformed messages and recipe notes already reported.
    var reportedMalformed: Set<String> = []

    /// Creates a client and loads its stored state. Throws `storage` when the directory is unusable.
    /// - Parameters:
    ///   - configuration: the study server, where pushes come from, the storage directory and the credentials.
    ///   - httpClient: a shared client (for many simulated devices in one process); one is made when nil.
    ///   - logger: where the client logs (label `survey-sdk` by default).
    ///   - now: the device clock.
    public init(configuration: SurveyClientConfiguration, httpClient: TransportClient? = nil, logger: Logger = Logger(label: "survey-sdk"),
                now: @escaping @Sendable () -> Date = { Date() }) throws(SurveyClientError) {
        let owned = httpClient == nil ? TransportClient() : nil
        try self.init(configuration: configuration, transport: httpClient ?? owned!, owning: owned, logger: logger, now: now)
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
        pingLimiter = PingRateLimiter(limit: configuration.telemetry.pingsPerInterval, interval: configuration.telemetry.rateInterval)
        // Bounded: an app that never reads the events loses the oldest, not its memory.
        (events, continuation) = AsyncStream<SurveyClientEvent>.makeStream(bufferingPolicy: .bufferingNewest(max(1, configuration.eventBufferLimit)))
        // (The actor's `isUploadEnabled` is not reachable from its initializer.)
        eventLog.setRecording(state.uploadEnabled ?? configuration.telemetry.uploadEnabled)
    }

    /// Events kept by default for a consumer that has not read them yet (the oldest are dropped past it); see
    /// ``SurveyClientConfiguration/eventBufferLimit``.
    public static let eventBufferLimit = 10_000

    deinit {
        // A client dropped without `close()`: its background tasks hold it weakly, and end with it.
        background.shutdown()
        closeRequest.fire()
        continuation.finish()
    }

    // MARK: Lifecycle

    /// Gets a relay token (once), opens the push stream (reconnecting on its own), registers (once), retries uploads
    /// left from an earlier run, and begins a session: a `dirty_startup` baseline ping when the last run did not end
    /// cleanly, an `events` ping (`startup`) with events left from it, a `baseline` ping (`active`), MMA `start`.
    /// - Throws: ``SurveyClientError`` when the relay or the server refuses (e.g. `push_token_required`,
    ///   `invalid_credentials`); the stream keeps running only after success.
    public func start() async throws(SurveyClientError) {
        if let running = startTask {
            // Another caller is starting the client: share its outcome (two starts must not mint two tokens).
            try await Self.awaitStart(running)
            return
        }
        guard lifecycle.starting() else { throw .closed }
        let task = Task { try await self.performStart() }
        startTask = task
        defer { startTask = nil }
        try await Self.awaitStart(task)
    }

    private static func awaitStart(_ task: Task<Void, any Error>) async throws(SurveyClientError) {
        do {
            try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        } catch let error as SurveyClientError {
            throw error
        } catch {
            throw SurveyClientError.cancelled
        }
    }

    private func performStart() async throws(SurveyClientError) {
        closePreviousRun()
        switch configuration.pushSource {
        case .relay:
            if state.relayToken == nil { try await obtainToken() }
            try Self.checkNotCancelled()
            startStream()
        case .external, .none:
            // Pushes handed over by the app (or none): their fetch retries run here rather than on a stream.
            startIntakeRetries()
        }
        if !state.registered { try await register() }
        try Self.checkNotCancelled()
        // A token the server does not hold yet (a rotation during registration, a crash after saving a new token):
        // tell it now; if that fails, the retry loop keeps at it.
        var retryNeeded = false
        do { try await announceTokenIfNeeded() } catch { retryNeeded = true }
        try Self.checkNotCancelled()
        if await !retryUploads() || retryNeeded { scheduleUploadRetry() }
        await retryPings()
        if state.scheduling == "device" {
            _ = try? await checkForSurveys()
            try Self.checkNotCancelled()
            startLocalSchedule()
        }
        try Self.checkNotCancelled()
        startHeartbeat()
        await confirmReceipts()
        // Feature values for messaging (best effort: the cached copy, or the app's defaults, serve offline).
        _ = try? await refreshFeatures()
        try Self.checkNotCancelled()
        await beginSession(startup: true)
    }

    /// A start that `stop()` or `close()` cancelled starts nothing more (what it started, they end).
    private static func checkNotCancelled() throws(SurveyClientError) {
        if Task.isCancelled { throw .cancelled }
    }

    /// Beiwe's `/mobile-heartbeat` while the client runs: one now, then every `heartbeatInterval`.
    private func startHeartbeat() {
        guard heartbeatTask == nil, let interval = configuration.heartbeatInterval else { return }
        heartbeatTask = background.spawn { [weak self] in
            while !Task.isCancelled {
                do {
                    // Held only for the calls, never across the sleep: a dropped client ends this loop.
                    guard let client = self else { return }
                    await client.sendHeartbeat()
                    await client.confirmReceipts()
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// One `/mobile-heartbeat`; the receipts it carried (`notification_uuids`) are confirmed once the server takes it.
    func sendHeartbeat() async {
        guard state.registered else { return }
        do {
            let carried = state.pendingReceipts ?? []
            let response = try await api.post("mobile-heartbeat", api.baseForm(state: state))
            if (200..<300).contains(response.status) {
                receiptsDelivered(carried)
            } else {
                logger.info("heartbeat answered \(response.status)")
            }
        } catch {
            logger.info("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stops the push stream and ends the session (as ``pause()``: its pings are sent, best effort). The client can be
    /// started again.
    public func stop() async {
        guard !lifecycle.isClosed else { return }
        // A start under way is cancelled and waited for first (its caller gets `cancelled`): otherwise it went on to
        // start the heartbeat and the stream after this stop had ended the background work.
        if let starting = startTask {
            starting.cancel()
            _ = await starting.result
        }
        await stopBackground()
        lifecycle.stopped()
        await endSession()
    }

    /// Cancels every background task and waits until each has ended: when this returns, nothing of the client runs.
    private func stopBackground() async {
        let tasks = [streamTask, localScheduleTask, uploadRetryTask, heartbeatTask, pingWaitTask, batchTask, intakeRetryTask].compactMap { $0 }
        batchTask = nil
        intakeRetryTask = nil
        streamTask = nil
        localScheduleTask = nil
        uploadRetryTask = nil
        heartbeatTask = nil
        pingWaitTask = nil
        pushStream.stop()
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        intake.streamEnded()
    }

    /// Stops (waiting for every background task to end), releases the HTTP client if this client made it and the
    /// storage directory's lock, and ends ``events``. Another client may use the directory afterwards; every later call
    /// on this one throws `closed` (or does nothing, for calls that cannot throw).
    public func close() async {
        startTask?.cancel()
        if let starting = startTask { _ = await starting.result }
        await stop()
        guard lifecycle.closing() else { return }
        if let session = sessionHeartbeatTask {
            sessionHeartbeatTask = nil
            session.cancel()
            await session.value
        }
        background.shutdown()
        continuation.finish()
        ownedHTTP?.shutdown()
        eventLog.close()
        files.releaseLock()
        closeRequest.fire()
    }

    /// True once ``close()`` ran.
    public var isClosed: Bool { lifecycle.isClosed }

    /// Starts the client and runs it until the calling task is cancelled or ``close()`` is called, then closes it: the
    /// structured way to own a client, as a child of a task group or a ServiceLifecycle service. When this returns,
    /// none of the client's work runs any more.
    ///
    /// ```swift
    /// try await withThrowingTaskGroup(of: Void.self) { group in
    ///     group.addTask { try await client.run() }
    ///     ...                      // use the client
    ///     group.cancelAll()        // run() closes it and returns
    /// }
    /// ```
    public func run() async throws(SurveyClientError) {
        // This call drives the client's task group, so every background task is a child of the caller's task.
        let drives = background.claim()
        let outcome: Result<Void, SurveyClientError> = await withDiscardingTaskGroup { group in
            if drives {
                group.addTask { [background] in await background.drive() }
            }
            do throws(SurveyClientError) {
                try await start()
            } catch {
                await close()
                // Cancelled while starting: the caller asked for the end, which is no failure.
                return error.isCancellation ? .success(()) : .failure(error)
            }
            await withTaskCancellationHandler {
                await closeRequest.wait()
            } onCancel: { [closeRequest] in
                closeRequest.fire()
            }
            await close()
            return .success(())
        }
        try outcome.get()
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
    private func submittingSurveyIDs() -> Set<String> {
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

    // MARK: Relay

    /// What one attempt at renewing a rotated or deleted token came to.
    enum RenewalOutcome: Sendable, Equatable {
        /// The server holds the new token (or the client is stopping).
        case done
        /// Failed; try again after a backoff. `minted` tells whether the new token exists already (only telling the
        /// server is left).
        case failed(minted: Bool)
    }

    /// One attempt at renewing the token (``PushStreamMachine/Action/renew(mint:reportGone:)``). Called from the stream's
    /// task, which waits between attempts *without* holding the client (a client dropped while the relay or the server
    /// is down is freed, and its directory unlocked); `stop()` still cancels it. A new token is minted once; if telling
    /// the server fails, only that is retried (the token is saved, and `RelayLink` remembers the server lacks it).
    private func renewTokenAttempt(mint: Bool) async -> RenewalOutcome {
        var minted = !mint
        do {
            if mint {
                try await obtainToken()
                minted = true
            }
            try await announceTokenIfNeeded()
            return .done
        } catch {
            if error.isCancellation { return .done }
            logger.info("token renewal failed", metadata: ["error": "\(error)"])
            return .failed(minted: minted)
        }
    }

    /// Sends `/set_fcm_token` when the server does not hold the token in use (``RelayLink``); throws when it fails.
    func announceTokenIfNeeded() async throws(SurveyClientError) {
        guard state.link.needsAnnouncement(registered: state.registered), let token = state.relayToken else { return }
        var form = api.baseForm(state: state)
        form["fcm_token"] = token
        let response = try await api.post("set_fcm_token", form)
        guard (200..<300).contains(response.status) else {
            throw SurveyClientError(code: "set_token_failed", message: "set_fcm_token answered \(response.status)", status: response.status)
        }
        state.link.serverAccepted(token)
        try save()
    }

    private func obtainToken() async throws(SurveyClientError) {
        guard let relayURL = configuration.relayURL else { return }
        let request: TransportRequest
        do {
            request = try .json("\(relayURL)/v1/devices", body: RelayWire.DeviceRequest(platform: configuration.platform.rawValue, appID: configuration.appID))
        } catch {
            throw SurveyClientError(code: "transport", message: "cannot encode token request: \(error)")
        }
        let response: TransportResponse
        do { response = try await http.send(request) } catch {
            throw SurveyClientError.transport("relay", error)
        }
        guard response.status == 201, let token = try? response.decode(RelayWire.TokenResponse.self).token else {
            throw SurveyClientError(code: "relay_refused", message: "relay answered \(response.status): \(MobileAPI.excerpt(response))", status: response.status)
        }
        // Saved before it is used anywhere; the server does not hold it yet.
        state.link.obtained(token)
        try save()
    }

    /// Runs the push stream's loop: ``PushStreamMachine`` decides, this task performs each action and reports back. The
    /// client is held for each call only, never across a wait or a read: a client dropped without `close()` ends its
    /// stream (no reconnecting for ever behind a later client's back).
    private func startStream() {
        guard streamTask == nil, state.relayToken != nil, configuration.relayURL != nil else { return }
        let (run, first) = pushStream.start()
        let http = self.http
        let logger = self.logger
        let deadAfter = configuration.relayKeepalive * 2.5
        streamTask = background.spawn { [weak self] in
            var action = first
            var open: TransportClient.EventStream?
            while !Task.isCancelled {
                let event: PushStreamMachine.Event
                switch action {
                case .finish:
                    return
                case .connect(let lastEventID):
                    guard let request = await self?.streamRequest(lastEventID: lastEventID) else { return }
                    do {
                        let stream = try await http.eventStream(request)
                        switch stream.status {
                        case 200: open = stream; event = .connected
                        case 404, 410: event = .tokenGone(status: stream.status)
                        default: event = .refused(status: stream.status)
                        }
                    } catch {
                        if Task.isCancelled { return }
                        logger.debug("push stream did not open", metadata: ["error": "\(error)"])
                        event = .failed
                    }
                case .read:
                    guard let stream = open else { return }
                    open = nil
                    weak let client = self
                    do {
                        let ended = try await Self.consume(stream.items, deadAfter: deadAfter,
                                                           handle: { event in await client?.handle(event) },
                                                           tick: { await client?.runDueRetries() ?? .seconds(1) })
                        event = .ended(dead: ended == .dead)
                    } catch {
                        if Task.isCancelled { return }
                        logger.debug("push stream dropped", metadata: ["error": "\(error)"])
                        event = .failed
                    }
                    await self?.streamEnded()
                case .wait(let duration, let reconnecting):
                    if reconnecting {
                        logger.debug("push stream silent for \(deadAfter); reconnecting")
                        await self?.emit(.streamReconnecting(reason: "dead"))
                    }
                    try? await Task.sleep(for: duration)
                    event = .waitOver
                case .renew(let mint, let reportGone):
                    if let status = reportGone {
                        await self?.emit(.error(SurveyClientError(code: "token_unregistered", message: "relay answered \(status) for the stream", status: status)))
                    }
                    guard let outcome = await self?.renewTokenAttempt(mint: mint) else { return }
                    switch outcome {
                    case .done: event = .renewed
                    case .failed(let minted): event = .renewalFailed(minted: minted)
                    }
                }
                guard !Task.isCancelled, let next = await self?.streamEvent(event, run: run) else { return }
                action = next
            }
        }
    }

    /// Feeds an event of loop `run` to the machine.
    private func streamEvent(_ event: PushStreamMachine.Event, run: Int) -> PushStreamMachine.Action {
        pushStream.event(event, run: run)
    }

    /// The stream request on the token in use, resuming after `lastEventID`; nil without a token or relay.
    private func streamRequest(lastEventID: String?) -> TransportRequest? {
        guard let token = state.relayToken, let relayURL = configuration.relayURL else { return nil }
        var request = TransportRequest(url: "\(relayURL)/v1/devices/\(token)/stream")
        if let lastEventID { request.headers.append(("Last-Event-ID", lastEventID)) }
        return request
    }

    /// How a stream ended.
    enum StreamEnd: Sendable { case closed, dead }

    /// Reads a stream until it ends, or until nothing at all (keepalives included) arrived for `deadAfter`: a
    /// connection that died without a FIN (a silent network drop) only shows up that way.
    /// `tick` runs beside the reading (retries of pushes whose fetch failed) and returns how long to wait before the
    /// next tick; it ends with the stream.
    static func consume(_ items: EventItems, deadAfter: Duration,
                        handle: @escaping @Sendable (ServerSentEvent) async -> Void,
                        tick: (@Sendable () async -> Duration)? = nil) async throws -> StreamEnd {
        let watch = StreamWatch()
        return try await withThrowingTaskGroup(of: StreamEnd.self) { group in
            if let tick {
                group.addTask {
                    while true { try await Task.sleep(for: await tick()) }
                }
            }
            group.addTask {
                for try await item in items {
                    watch.touch()
                    guard case .event(let event) = item else { continue }
                    // Handling (fetching a survey) may take longer than the keepalive period; it is not silence.
                    watch.busy(true)
                    await handle(event)
                    watch.busy(false)
                }
                return .closed
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: min(deadAfter / 5, .seconds(1)))
                    if watch.isSilent(for: deadAfter) { return .dead }
                }
            }
            let first = try await group.next() ?? .closed
            group.cancelAll()
            return first
        }
    }

    /// The stream ended: pushes still being fetched come again on the next connection (they were not acked).
    private func streamEnded() {
        intake.streamEnded()
    }

    private func handle(_ event: ServerSentEvent) async {
        guard event.event == "push" else { return }
        guard let message = try? WireJSON.decode(RelayWire.Message.self, from: event.data) else {
            emit(.error(SurveyClientError(code: "bad_push", message: "unreadable relay message")))
            return
        }
        let data = SurveyPush.dataFields(fromRelayPayload: message.payload)
        let push: SurveyPush
        do {
            push = try SurveyPush(dataFields: data)
        } catch {
            // Not a survey push (or malformed): acknowledge so it is not sent again, and report it.
            await ack(message.id)
            pushStream.handled(message.id)
            emit(.error(SurveyClientError(code: "bad_push", message: "\(error)")))
            return
        }
        let handled = handledUUIDs()
        let arrival = intake.received(messageID: message.id, push: push, nonceSeen: !push.nonce.isEmpty && state.seenNonces.contains(push.nonce),
                                      handled: handled)
        switch arrival {
        case .inProgress:
            return
        case .duplicate:
            await ack(message.id)
            pushStream.handled(message.id)
            emit(.duplicateIgnored(messageID: message.id))
        case .fetch(let surveys):
            emit(.pushReceived(messageID: message.id, surveyIDs: push.surveyIDs))
            record(category: "survey", name: "push_received", extra: ["surveys": String(push.surveyIDs.count)])
            await attempt(messageID: message.id, surveys: surveys)
        }
    }

    /// A check of whether occurrences were shown already: remembered, or stored (a crash came between storing and
    /// remembering).
    private func handledUUIDs() -> @Sendable ([String]) -> Bool {
        let seen = Set(state.seenUUIDs)
        let stored = storedScheduleUUIDs()
        return { list in !list.isEmpty && list.allSatisfy { seen.contains($0) || stored.contains($0) } }
    }

    /// The occurrence ids of every stored survey: read from disk once per run, then kept in step by
    /// ``writeSurvey(_:)`` and ``removeSurvey(_:)`` (a push no longer reads every stored survey).
    private func storedScheduleUUIDs() -> Set<String> {
        if let index = storedIndex { return Set(index.values.joined()) }
        var index: [String: [String]] = [:]
        for (_, stored) in files.list(StoredSurvey.self, in: files.surveysURL) { index[stored.surveyID] = stored.scheduleUUIDs }
        storedIndex = index
        return Set(index.values.joined())
    }

    /// Writes a stored survey (and its occurrences into the index).
    private func writeSurvey(_ stored: StoredSurvey) throws(SurveyClientError) {
        try files.write(stored, to: files.surveyURL(stored.surveyID))
        storedIndex?[stored.surveyID] = stored.scheduleUUIDs
    }

    /// Removes a stored survey (and its occurrences from the index).
    private func removeSurvey(_ surveyID: String) {
        files.remove(files.surveyURL(surveyID))
        storedIndex?[surveyID] = nil
    }

    /// Fetches the given surveys of a push, stores or withdraws each, and acks the push once all reached a final outcome.
    private func attempt(messageID: String, surveys: [String]) async {
        guard let push = intake.push(messageID) else { return }
        var outcomes: [String: PushIntake.Outcome] = [:]
        var surfaced: [StoredSurvey] = []
        var withdrawn: [(surveyID: String, uuids: [String])] = []
        var failures: [SurveyClientError] = []
        // Against a server without `/download_survey` (Beiwe): the study's list, fetched once for the whole push.
        var listed: [String: SurveyEntry]?
        for surveyID in surveys {
            let its = push.surveyUUIDs[surveyID] ?? []
            do {
                if let entry = try await fetchPushed(surveyID: surveyID, uuids: its, listed: &listed) {
                    surfaced.append(try storePushed(entry, uuids: its, sentTime: push.sentTime))
                    outcomes[surveyID] = .stored
                } else {
                    // The server says the survey is gone (deleted after the push went out): final. The occurrence is
                    // withdrawn, not retried.
                    outcomes[surveyID] = .withdrawn
                    withdrawn.append((surveyID, its))
                }
            } catch {
                if error.isCancellation { return }
                outcomes[surveyID] = .failed
                failures.append(error)
            }
        }
        // Remembered before anything is shown: from here on no crash can surface these occurrences again.
        let shownUUIDs = surfaced.flatMap { stored in push.surveyUUIDs[stored.surveyID] ?? [] }
        state.remember(nonce: "", uuids: shownUUIDs + withdrawn.flatMap(\.uuids))
        state.addReceipts(shownUUIDs)
        var random = SystemRandomNumberGenerator()
        let completion = intake.fetched(messageID: messageID, outcomes: outcomes, now: .now, random: &random)
        if completion == .done { state.remember(nonce: push.nonce, uuids: []) }
        try? save()
        // A survey whose earlier answers are still on their way is shown once they are accepted (see `upload`).
        let submitting = submittingSurveyIDs()
        for stored in surfaced where !submitting.contains(stored.surveyID) { emit(.surveyAvailable(stored)) }
        for gone in withdrawn {
            record(category: "survey", name: "withdrawn", extra: ["survey_id": gone.surveyID])
            emit(.surveyWithdrawn(surveyID: gone.surveyID, scheduleUUIDs: gone.uuids))
        }
        switch completion {
        case .done:
            await ack(messageID)
            pushStream.handled(messageID)
        case .retry(let after, let firstFailure):
            // Fetched again on the live stream once the wait is over (`runDueRetries`); the error is reported once.
            pushStream.handleFailed()
            if firstFailure { for error in failures { emit(.error(error)) } }
            logger.debug("push fetch failed; retrying", metadata: ["message": "\(messageID)", "after": "\(after)"])
        }
        await confirmReceipts()
    }

    // MARK: Pushes from the app (`PushSource.external`)

    /// A push the host app received through a push service of its own: Beiwe's data fields (`type`, `survey_ids`,
    /// `sent_time`, `nonce`, `survey_uuids_dict`). Handled as a relay push is (de-duplicated; each survey fetched and
    /// stored, or withdrawn; a transient failure retried in the background), and acknowledged to nobody.
    /// - Returns: the surveys that became available now.
    /// - Throws: `bad_push` for fields that are not a survey push, `closed`.
    @discardableResult
    public func receive(push data: [String: String]) async throws(SurveyClientError) -> [StoredSurvey] {
        guard !lifecycle.isClosed else { throw .closed }
        let push: SurveyPush
        do { push = try SurveyPush(dataFields: data) } catch {
            throw SurveyClientError(code: SurveyClientError.Code.badPush.rawValue, message: "\(error)")
        }
        let messageID = "external-" + (push.nonce.isEmpty ? UUID().uuidString.lowercased() : push.nonce)
        let before = Set(pendingSurveys().map(\.surveyID))
        switch intake.received(messageID: messageID, push: push, nonceSeen: !push.nonce.isEmpty && state.seenNonces.contains(push.nonce),
                               handled: handledUUIDs()) {
        case .duplicate:
            emit(.duplicateIgnored(messageID: messageID))
            return []
        case .inProgress:
            return []
        case .fetch(let surveys):
            emit(.pushReceived(messageID: messageID, surveyIDs: push.surveyIDs))
            record(category: "survey", name: "push_received", extra: ["surveys": String(push.surveyIDs.count)])
            await attempt(messageID: messageID, surveys: surveys)
        }
        return pendingSurveys().filter { push.surveyIDs.contains($0.surveyID) && !before.contains($0.surveyID) }
    }

    /// The push token the host app's push service gave this device (`PushSource.external`): saved, and sent to the
    /// server with `/set_fcm_token` now if registered (else right after registration; retried until it succeeds).
    public func updatePushToken(_ token: String) async throws(SurveyClientError) {
        guard !lifecycle.isClosed else { throw .closed }
        guard !token.isEmpty else { throw SurveyClientError(code: "invalid_token", message: "a push token must not be empty") }
        state.link.obtained(token)
        try save()
        do { try await announceTokenIfNeeded() } catch {
            if !error.isCancellation { scheduleUploadRetry() }
            throw error
        }
    }

    /// Retries of pushes handed over by the app, while the client runs without a relay stream.
    private func startIntakeRetries() {
        guard intakeRetryTask == nil else { return }
        intakeRetryTask = background.spawn { [weak self] in
            while !Task.isCancelled {
                guard let wait = await self?.runDueRetries() else { return }
                try? await Task.sleep(for: wait)
            }
        }
    }

    /// Runs the retries that are due; returns how long until the next one (at most a second).
    func runDueRetries() async -> Duration {
        for (messageID, surveys) in intake.takeDue(now: .now) {
            await attempt(messageID: messageID, surveys: surveys)
        }
        guard let next = intake.nextDue else { return .seconds(1) }
        return max(.milliseconds(10), min(.seconds(1), next - .now))
    }

    private func ack(_ id: String) async {
        guard let token = state.relayToken, let relayURL = configuration.relayURL,
              let request = try? TransportRequest.json("\(relayURL)/v1/devices/\(token)/ack", body: RelayWire.AckRequest(ids: [id]))
        else { return }
        _ = try? await http.send(request)
    }

    // MARK: Server

    private func register() async throws(SurveyClientError) {
        var form = api.baseForm(state: state)
        // The token this request carries: a rotation while it is in flight leaves the new one for `/set_fcm_token`.
        let sentToken = state.relayToken
        form["new_password"] = configuration.newPassword ?? configuration.temporaryPassword
        form["phone_number"] = "NOT_SUPPLIED"
        form["fcm_token"] = sentToken ?? ""
        form["device_os"] = configuration.platform == .ios ? "iOS" : "Android"
        form["beiwe_version"] = Self.sdkVersion
        let response = try await api.post("register_user", form)
        guard response.status == 200 else {
            let code = MobileAPI.errorCode(response) ?? (response.status == 401 || response.status == 403 ? "invalid_credentials" : "registration_failed")
            // Thrown to the caller of `start()`, not also emitted: each error is reported once.
            throw SurveyClientError(code: code, message: "register_user answered \(response.status): \(MobileAPI.excerpt(response))", status: response.status)
        }
        guard let body = try? response.decode(JSONValue.self), let key = body["client_public_key"]?.stringValue,
              let studyID = body["study_id"]?.stringValue else {
            throw SurveyClientError(code: "registration_failed", message: "register_user answered without client_public_key/study_id")
        }
        state.registered = true
        // Registration does not count as telling the server the token: the real Beiwe ignores `fcm_token` there and
        // stores it only through `/set_fcm_token`, which `start()` sends next (`RelayLink`).
        _ = sentToken
        state.passwordHash = BeiwePassword.deviceHash(configuration.newPassword ?? configuration.temporaryPassword)
        state.publicKey = key
        state.studyID = studyID
        // No `scheduling` key: an old-style study, which is what every real Beiwe server runs (the device schedules).
        state.scheduling = body["scheduling"]?.stringValue ?? "device"
        state.timeZone = body["timezone"]?.stringValue ?? configuration.timeZone
        if let frequency = body["device_settings"]?["check_for_new_surveys_frequency_seconds"]?.numberValue {
            state.checkFrequencySeconds = max(30, Int(frequency))
        }
        state.localCheckedThrough = WireTime.format(now(), milliseconds: true)
        try save()
        record(category: "registration", name: "registered", extra: ["scheduling": state.scheduling ?? ""])
        emit(.registered(studyID: studyID, scheduling: state.scheduling ?? "server", timeZone: state.timeZone ?? configuration.timeZone))
    }

    /// The spec of a pushed survey, or nil when the server says the survey is gone. Our mock server answers
    /// `/download_survey` (404 `survey_not_found`: gone); a server without that route (Beiwe: its 404 page) is asked
    /// for the study's list once (`/download_surveys`, kept in `listed` for the rest of the push), as Beiwe's apps do,
    /// and a survey missing from the list is gone. The missing route is remembered (``ServerRoutes``).
    private func fetchPushed(surveyID: String, uuids: [String], listed: inout [String: SurveyEntry]?) async throws(SurveyClientError) -> SurveyEntry? {
        if !routes.lacks(.downloadSurvey) {
            var form = api.baseForm(state: state)
            form["survey_id"] = surveyID
            if let first = uuids.first { form["schedule_uuid"] = first }
            let response = try await api.post("download_survey", form)
            if response.status == 200, let entry = try? response.decode(SurveyEntry.self) { return entry }
            let code = MobileAPI.errorCode(response)
            switch routes.answered(.downloadSurvey, status: response.status, errorCode: code) {
            case .present:
                if response.status == 404, code == SurveyClientError.Code.surveyNotFound.rawValue { return nil }
                throw SurveyClientError(code: "download_failed", message: "download_survey \(surveyID) answered \(response.status): \(MobileAPI.excerpt(response))",
                                        status: response.status)
            case .missing:
                logger.info("the server has no /download_survey; pushed surveys are taken from /download_surveys, as Beiwe's apps do")
            }
        }
        if listed == nil {
            let response = try await api.post("download_surveys", api.baseForm(state: state))
            guard response.status == 200, let list = try? response.decode([SurveyEntry].self) else {
                throw SurveyClientError(code: "download_failed", message: "download_surveys answered \(response.status): \(MobileAPI.excerpt(response))",
                                        status: response.status)
            }
            listed = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        }
        guard var entry = listed?[surveyID] else { return nil }
        // As `/download_survey` serves it: the push, not the timings, says when it is due.
        entry.timings = nil
        return entry
    }

    /// Stores a pushed survey (merged with an unanswered earlier copy).
    private func storePushed(_ entry: SurveyEntry, uuids: [String], sentTime: String) throws(SurveyClientError) -> StoredSurvey {
        var stored = StoredSurvey(entry: entry, scheduleUUIDs: uuids, sentTime: sentTime, receivedAt: WireTime.format(now(), milliseconds: true))
        if let existing = files.read(StoredSurvey.self, from: files.surveyURL(entry.id)) {
            // Still unanswered from an earlier push: keep its time, add the new occurrences.
            stored.receivedAt = existing.receivedAt
            stored.scheduleUUIDs = existing.scheduleUUIDs + uuids.filter { !existing.scheduleUUIDs.contains($0) }
        }
        try writeSurvey(stored)
        return stored
    }

    /// Encrypts the answers with the study's public key and uploads them; on acceptance the stored survey is removed.
    /// - Parameters:
    ///   - answers: answer text by question id; questions not answered are written with an empty answer.
    ///   - surveyID: the stored survey the answers are for.
    /// - Throws: `survey_not_found` when no such survey is stored, `not_registered`, `transport` or `upload_failed`
    ///   (the encrypted file stays in the outbox and is retried in the background with backoff, and by ``start()``;
    ///   ``SurveyClientEvent/submitted(surveyID:fileName:)`` follows once the server takes it), `upload_rejected`.
    public func submit(answers: [String: String], for surveyID: String) async throws(SurveyClientError) {
        guard !lifecycle.isClosed else { throw .closed }
        guard state.registered, let keyText = state.publicKey, let der = Data(base64Encoded: keyText) else {
            throw SurveyClientError(code: "not_registered", message: "register before submitting")
        }
        guard let stored = files.read(StoredSurvey.self, from: files.surveyURL(surveyID)) else {
            throw SurveyClientError(code: "survey_not_found", message: "no stored survey \(surveyID)")
        }
        if submittingSurveyIDs().contains(surveyID) {
            throw SurveyClientError(code: "submission_pending",
                                    message: "answers to \(surveyID) are already waiting to be uploaded; they are retried until the server takes them")
        }
        let rows = Self.answerRows(for: stored.entry, answers: answers)
        let body: String
        do {
            body = try BeiweFile.encrypt(lines: SurveyAnswersCSV.lines(for: rows), publicKey: RSAKey(publicKeyDER: [UInt8](der)))
        } catch {
            throw SurveyClientError(code: "encryption_failed", message: "\(error)")
        }
        let fileName = SurveyAnswersCSV.fileName(patientID: configuration.patientID, surveyID: surveyID, epochMillis: WireTime.epochMillis(now()))
        let pending = PendingUpload(fileName: fileName, surveyID: surveyID, body: body, scheduleUUIDs: stored.scheduleUUIDs)
        try files.write(pending, to: files.uploadURL(fileName))
        do {
            try await upload(pending)
        } catch {
            // Kept in the outbox: retried in the background until the server takes it (`.submitted` then). A cancelled
            // call is no failure: its file waits for the next retry or start, and nothing is scheduled on its behalf.
            if error.code != "upload_rejected" && !error.isCancellation { scheduleUploadRetry() }
            throw error
        }
    }

    /// Retries the upload and ping outboxes with exponential backoff and jitter (0.5 s doubling to 60 s, each wait from
    /// the upper half of its range) until both are empty or the client stops.
    func scheduleUploadRetry() {
        guard uploadRetryTask == nil else { return }
        uploadRetryTask = background.spawn { [weak self] in
            var backoff = Backoff.outbox
            while !Task.isCancelled {
                try? await Task.sleep(for: backoff.failed())
                // Held only for the calls, never across the sleep: a dropped client ends this loop.
                guard let client = self, !Task.isCancelled else { return }
                let uploadsDone = await client.retryUploads()
                let pingsDone = await client.retryPingsOnce()
                let tokenDone = (try? await client.announceTokenIfNeeded()) != nil
                if uploadsDone && pingsDone && tokenDone { break }
            }
            await self?.uploadRetryEnded()
        }
    }

    private func uploadRetryEnded() { uploadRetryTask = nil }

    /// Uploads one answer file. `background`: no caller will see a thrown error, so a final refusal is emitted (each
    /// error is reported once: thrown to a caller, or emitted).
    private func upload(_ pending: PendingUpload, background: Bool = false) async throws(SurveyClientError) {
        // One upload of a file at a time: `submit` and the retry loop never POST it together.
        guard outbox.begin(pending.fileName) else {
            throw SurveyClientError(code: "submission_pending", message: "\(pending.fileName) is being uploaded")
        }
        defer { outbox.end(pending.fileName) }
        var form = api.baseForm(state: state)
        form["file_name"] = pending.fileName
        form["file"] = pending.body
        let response = try await api.upload(form)
        let text = response.text
        if response.status == 200 {
            if text == "upload successful." {
                // The survey goes before its outbox file: a crash in between leaves the file, whose retry the server
                // stores once (same name); the other order would leave the survey to be answered a second time.
                // Occurrences that arrived while these answers were on their way stay, and are shown now.
                let url = files.surveyURL(pending.surveyID)
                var remaining: StoredSurvey?
                if let answered = pending.scheduleUUIDs, var stored = files.read(StoredSurvey.self, from: url) {
                    stored.scheduleUUIDs.removeAll { answered.contains($0) }
                    if !stored.scheduleUUIDs.isEmpty { remaining = stored }
                }
                if let remaining { try writeSurvey(remaining) } else { removeSurvey(pending.surveyID) }
                files.remove(files.uploadURL(pending.fileName))
                record(category: "survey", name: "submitted", extra: ["survey_id": pending.surveyID])
                emit(.submitted(surveyID: pending.surveyID, fileName: pending.fileName))
                if let remaining { emit(.surveyAvailable(remaining)) }
                return
            }
            // Beiwe's 200 for a file it can never accept: the device deletes the file, the survey stays.
            files.remove(files.uploadURL(pending.fileName))
            let error = SurveyClientError(code: "upload_rejected", message: text, status: 200)
            if background { emit(.error(error)) }
            throw error
        }
        throw SurveyClientError(code: response.status == 401 || response.status == 403 ? "invalid_credentials" : "upload_failed",
                                message: "upload answered \(response.status): \(MobileAPI.excerpt(response))", status: response.status)
    }

    /// Tries every file of the upload outbox once; true when the outbox is empty afterwards.
    @discardableResult
    private func retryUploads() async -> Bool {
        for (url, listed) in files.list(PendingUpload.self, in: files.uploadsURL) {
            // Each file is read again just before it goes: the list was taken before earlier uploads awaited, and
            // `submit` may have sent and removed it meanwhile (sending it again would report it submitted twice).
            guard !outbox.inFlight.contains(listed.fileName), let pending = files.read(PendingUpload.self, from: url) else { continue }
            do { try await upload(pending, background: true) } catch { logger.info("upload retry failed", metadata: ["error": "\(error)"]) }
        }
        return files.list(PendingUpload.self, in: files.uploadsURL).isEmpty
    }

    /// Beiwe answer rows for a survey's questions (info text boxes are skipped).
    static func answerRows(for entry: SurveyEntry, answers: [String: String]) -> [SurveyAnswer] {
        entry.content.compactMap { question -> SurveyAnswer? in
            guard let id = question["question_id"]?.stringValue, let type = question["question_type"]?.stringValue,
                  type != "info_text_box" else { return nil }
            let text = question["question_text"]?.stringValue ?? question["prompt"]?.stringValue ?? ""
            var options = ""
            if let list = question["answers"]?.arrayValue {
                options = "[" + list.compactMap { $0["text"]?.stringValue }.joined(separator: "; ") + "]"
            } else if let min = question["min"]?.stringValue, let max = question["max"]?.stringValue {
                options = "\(min) - \(max)"
            }
            return SurveyAnswer(questionID: id, questionType: type, questionText: text, answerOptions: options, answer: answers[id] ?? "")
        }
    }

    // MARK: Device scheduling (old-style studies)

    /// Downloads the study's survey list (`/download_surveys`), forgets stored surveys the study no longer has,
    /// and fires whatever the `timings` make due by the device clock. Returns the surveys that became available.
    /// Old-style studies poll this every `check_for_new_surveys_frequency_seconds`; it can also be called at any time.
    @discardableResult
    public func checkForSurveys() async throws(SurveyClientError) -> [StoredSurvey] {
        guard !lifecycle.isClosed else { throw .closed }
        let response = try await api.post("download_surveys", api.baseForm(state: state))
        guard response.status == 200, let list = try? response.decode([SurveyEntry].self) else {
            throw SurveyClientError(code: "download_failed", message: "download_surveys answered \(response.status)", status: response.status)
        }
        state.deviceSurveys = list
        state.lastSurveyCheck = WireTime.format(now(), milliseconds: true)
        let ids = Set(list.map(\.id))
        if state.scheduling == "device" {
            for stored in pendingSurveys() where !ids.contains(stored.surveyID) {
                removeSurvey(stored.surveyID)
            }
        }
        try save()
        return try runLocalSchedule()
    }

    /// Fires surveys of an old-style study whose `timings` fell due between the last evaluation and the device
    /// clock's now, in the device's time zone (the `Scheduling` module's rules). Each due survey is stored and
    /// surfaced exactly like a pushed one. Returns the surveys that became available.
    @discardableResult
    public func runLocalSchedule() throws(SurveyClientError) -> [StoredSurvey] {
        guard !lifecycle.isClosed else { throw .closed }
        guard state.scheduling == "device" else { return [] }
        let current = now()
        let from = state.localCheckedThrough.flatMap(WireTime.parse) ?? current
        guard current > from else { return [] }
        let zone = TimeZone(identifier: configuration.timeZone) ?? TimeZone(identifier: state.timeZone ?? "") ?? TimeZone(identifier: "UTC")!
        let context = ParticipantContext(timeZone: zone, registeredAt: .distantPast)
        var fired: [StoredSurvey] = []
        for entry in state.deviceSurveys {
            let schedules = OccurrenceCalculator.weeklySchedules(fromTimings: entry.timings ?? [])
            let due = OccurrenceCalculator.occurrences(of: schedules, for: context, after: from, through: current)
            let uuids = due.map { "local-\(entry.id)-\($0.localTimestamp)" }.filter { !state.seenUUIDs.contains($0) }
            guard let last = due.last, !uuids.isEmpty else { continue }
            var spec = entry
            spec.timings = nil
            var stored = StoredSurvey(entry: spec, scheduleUUIDs: uuids, sentTime: WireTime.beiweSentTime(last.dueAt),
                                      receivedAt: WireTime.format(current, milliseconds: true))
            if let existing = files.read(StoredSurvey.self, from: files.surveyURL(entry.id)) {
                stored.receivedAt = existing.receivedAt
                stored.scheduleUUIDs = existing.scheduleUUIDs + uuids.filter { !existing.scheduleUUIDs.contains($0) }
            }
            try writeSurvey(stored)
            state.remember(nonce: "", uuids: uuids)
            fired.append(stored)
        }
        state.localCheckedThrough = WireTime.format(current, milliseconds: true)
        try save()
        for stored in fired {
            record(category: "survey", name: "local_trigger", extra: ["survey_id": stored.surveyID])
            emit(.surveyAvailable(stored))
        }
        return fired
    }

    private func startLocalSchedule() {
        guard localScheduleTask == nil else { return }
        localScheduleTask = background.spawn { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(30))
                guard !Task.isCancelled, let client = self else { return }
                await client.localScheduleTick()
            }
        }
    }

    private func localScheduleTick() async {
        let frequency = TimeInterval(state.checkFrequencySeconds ?? 3600)
        let last = state.lastSurveyCheck.flatMap(WireTime.parse) ?? .distantPast
        do {
            if now().timeIntervalSince(last) >= frequency {
                try await checkForSurveys()
            } else {
                try runLocalSchedule()
            }
        } catch {
            emit(.error(error))
        }
    }

    // MARK: Helpers

    func save() throws(SurveyClientError) {
        try files.write(state, to: files.stateURL)
    }

    func emit(_ event: SurveyClientEvent) {
        continuation.yield(event)
    }
}

/// When a push stream last showed a sign of life, and whether an event is being handled.
final class StreamWatch: Sendable {
    private struct State {
        var last = ContinuousClock.now
        var busy = false
    }
    private let state = Mutex(State())

    func touch() { state.withLock { $0.last = .now } }

    func busy(_ value: Bool) {
        state.withLock {
            $0.busy = value
            $0.last = .now
        }
    }

    func isSilent(for limit: Duration) -> Bool {
        state.withLock { !$0.busy && ContinuousClock.now - $0.last > limit }
    }
}
