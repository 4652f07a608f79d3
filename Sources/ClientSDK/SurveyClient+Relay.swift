import Foundation
import Synchronization
import Logging
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// The relay link: the token (obtained, renewed, announced to the server with `/set_fcm_token`), registration, and
/// the push stream's loop (``PushStreamMachine`` decides; this performs).
extension SurveyClient {
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
    func renewTokenAttempt(mint: Bool) async -> RenewalOutcome {
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

    func obtainToken() async throws(SurveyClientError) {
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

    /// Opens the push stream (its loop, ``streamLoop(of:)``) when there is a token and a relay; does nothing while it runs.
    func startStream() {
        guard state.relayToken != nil, configuration.relayURL != nil else { return }
        runtime.stream.send(.begin)
    }

    /// The push stream's loop: its ``PushStreamMachine`` decides, the loop performs each action as work that reports the
    /// outcome back. The client is held for each call only, never across a wait or a read: a client dropped without
    /// `close()` ends its stream (no reconnecting for ever behind a later client's back).
    static func streamLoop(of client: SurveyClient) -> @Sendable () async -> Void {
        let http = client.http
        let logger = client.logger
        let deadAfter = client.configuration.relayKeepalive * 2.5
        let mailbox = client.runtime.stream
        let client = WeakReference(client)
        return {
            // The stream a connect opened, for the read after it (the connection is the loop's I/O, not the machine's); a
            // halt between the two closes it.
            let opened = Mutex<TransportClient.EventStream?>(nil)
            await MachineLoop.run(PushStreamMachine(), mailbox: mailbox, reset: { opened.withLock { $0 = nil } }) { action in
                switch action {
                case .none, .finish:
                    return .none
                case .connect:
                    return .run {
                        guard let request = await client.object?.streamRequest() else { return nil }
                        do {
                            let stream = try await http.eventStream(request)
                            switch stream.status {
                            case 200:
                                opened.withLock { $0 = stream }
                                await client.object?.streamConnected()
                                return .connected
                            case 404, 410: return .tokenGone(status: stream.status)
                            default: return .refused(status: stream.status)
                            }
                        } catch {
                            if Task.isCancelled { return nil }
                            logger.debug("push stream did not open", metadata: ["error": "\(error)"])
                            return .failed
                        }
                    }
                case .read:
                    return .run {
                        guard let stream = opened.withLock({ $0.take() }) else { return .failed }
                        let event: PushStreamMachine.Event
                        do {
                            let ended = try await Self.consume(stream.items, deadAfter: deadAfter,
                                                               handle: { event in await client.object?.handle(event) },
                                                               tick: { await client.object?.runDueRetries() ?? .seconds(1) })
                            event = .ended(dead: ended == .dead)
                        } catch {
                            if Task.isCancelled { return nil }
                            logger.debug("push stream dropped", metadata: ["error": "\(error)"])
                            event = .failed
                        }
                        await client.object?.streamEnded()
                        return event
                    }
                case .wait(let duration, let reconnecting):
                    guard reconnecting else { return .after(duration, .waitOver) }
                    return .run {
                        logger.debug("push stream silent for \(deadAfter); reconnecting")
                        await client.object?.emit(.streamReconnecting(reason: "dead"))
                        try? await Task.sleep(for: duration)
                        return Task.isCancelled ? nil : .waitOver
                    }
                case .renew(let mint, let reportGone):
                    return .run {
                        if let status = reportGone {
                            await client.object?.emit(.error(SurveyClientError(code: "token_unregistered",
                                                                               message: "relay answered \(status) for the stream", status: status)))
                        }
                        guard let outcome = await client.object?.renewTokenAttempt(mint: mint) else { return nil }
                        switch outcome {
                        case .done: return .renewed
                        case .failed(let minted): return .renewalFailed(minted: minted)
                        }
                    }
                }
            }
        }
    }

    /// The stream request on the token in use, resuming after the resume point; nil without a token or relay.
    func streamRequest() -> TransportRequest? {
        guard let token = state.relayToken, let relayURL = configuration.relayURL else { return nil }
        var request = TransportRequest(url: "\(relayURL)/v1/devices/\(token)/stream")
        if let lastEventID = resumePoint.lastEventID { request.headers.append(("Last-Event-ID", lastEventID)) }
        return request
    }

    /// A stream answered 200: the relay resends what was not acked, so an earlier failure no longer blocks resuming.
    func streamConnected() {
        resumePoint.connected()
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


    // MARK: Server

    func register() async throws(SurveyClientError) {
        var form = api.baseForm(state: state)
        // The token this request carries: a rotation while it is in flight leaves the new one for `/set_fcm_token`.
        let sentToken = state.relayToken
        form["new_password"] = configuration.newPassword ?? configuration.temporaryPassword
        form["phone_number"] = "NOT_SUPPLIED"
        form["fcm_token"] = sentToken ?? ""
        form["device_os"] = configuration.platform == .ios ? "iOS" : "Android"
        form["beiwe_version"] = Self.sdkVersion
        var response = try await api.post("register_user", form)
        if response.status == 401 || response.status == 403, let newPassword = configuration.newPassword,
           newPassword != configuration.temporaryPassword, state.passwordHash == BeiwePassword.deviceHash(configuration.temporaryPassword) {
            // A registration whose answer never arrived (the client stopped mid-request, or the connection broke after
            // the server took it) has already set the new password: the server now knows only that one. Once more
            // with it; a wrong password fails the same way twice.
            form["password"] = BeiwePassword.deviceHash(newPassword)
            let again = try await api.post("register_user", form)
            if again.status == 200 { response = again }
        }
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
}
