import Foundation
import Synchronization
import Logging
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// Pushes becoming stored surveys: from the relay stream or handed over by the app, de-duplicated (``PushIntake``),
/// each survey fetched and stored or withdrawn, failures retried, the push acknowledged once all are final.
extension SurveyClient {
    /// The stream ended: pushes still being fetched come again on the next connection (they were not acked).
    func streamEnded() {
        intake.streamEnded()
    }

    func handle(_ event: ServerSentEvent) async {
        guard event.event == "push" else { return }
        guard let message = try? WireJSON.decode(RelayWire.Message.self, from: event.data) else {
            // Acknowledged by the event's id (the relay's message id): unacked, it came again on every connection and,
            // ten of them, filled the relay's window of unacked messages so that no push came after them.
            if let id = event.id {
                await ack(id)
                resumePoint.handled(id)
            }
            emit(.error(SurveyClientError(code: "bad_push", message: "unreadable relay message \(event.id ?? "without an id")")))
            return
        }
        let data = SurveyPush.dataFields(fromRelayPayload: message.payload)
        let push: SurveyPush
        do {
            push = try SurveyPush(dataFields: data)
        } catch {
            // Not a survey push (or malformed): acknowledge so it is not sent again, and report it.
            await ack(message.id)
            resumePoint.handled(message.id)
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
            resumePoint.handled(message.id)
            emit(.duplicateIgnored(messageID: message.id))
        case .fetch(let surveys):
            emit(.pushReceived(messageID: message.id, surveyIDs: push.surveyIDs, sentTime: push.sentTime))
            record(category: "survey", name: "push_received", extra: ["surveys": String(push.surveyIDs.count)])
            await attempt(messageID: message.id, surveys: surveys)
        }
    }

    /// A check of whether occurrences were shown already: remembered, or stored (a crash came between storing and
    /// remembering).
    func handledUUIDs() -> @Sendable ([String]) -> Bool {
        let seen = Set(state.seenUUIDs)
        let stored = storedScheduleUUIDs()
        return { list in !list.isEmpty && list.allSatisfy { seen.contains($0) || stored.contains($0) } }
    }

    /// The occurrence ids of every stored survey: read from disk once per run, then kept in step by
    /// ``writeSurvey(_:)`` and ``removeSurvey(_:)`` (a push no longer reads every stored survey).
    func storedScheduleUUIDs() -> Set<String> {
        if let index = storedIndex { return Set(index.values.joined()) }
        var index: [String: [String]] = [:]
        for (_, stored) in files.list(StoredSurvey.self, in: files.surveysURL) { index[stored.surveyID] = stored.scheduleUUIDs }
        storedIndex = index
        return Set(index.values.joined())
    }

    /// Writes a stored survey (and its occurrences into the index).
    func writeSurvey(_ stored: StoredSurvey) throws(SurveyClientError) {
        try files.write(stored, to: files.surveyURL(stored.surveyID))
        storedIndex?[stored.surveyID] = stored.scheduleUUIDs
    }

    /// Removes a stored survey (and its occurrences from the index).
    func removeSurvey(_ surveyID: String) {
        files.remove(files.surveyURL(surveyID))
        storedIndex?[surveyID] = nil
    }

    /// Fetches the given surveys of a push, stores or withdraws each, and acks the push once all reached a final outcome.
    /// Returns the surveys announced with ``SurveyClientEvent/surveyAvailable(_:)``.
    @discardableResult
    func attempt(messageID: String, surveys: [String]) async -> [StoredSurvey] {
        guard let push = intake.push(messageID) else { return [] }
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
                if error.isCancellation { return [] }
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
        let announced = surfaced.filter { !submitting.contains($0.surveyID) }
        for stored in announced { emit(.surveyAvailable(stored)) }
        for gone in withdrawn {
            record(category: "survey", name: "withdrawn", extra: ["survey_id": gone.surveyID])
            emit(.surveyWithdrawn(surveyID: gone.surveyID, scheduleUUIDs: gone.uuids))
        }
        switch completion {
        case .done:
            await ack(messageID)
            resumePoint.handled(messageID)
        case .retry(let after, let firstFailure):
            // Fetched again on the live stream once the wait is over (`runDueRetries`); the error is reported once.
            resumePoint.failed()
            if firstFailure { for error in failures { emit(.error(error)) } }
            logger.debug("push fetch failed; retrying", metadata: ["message": "\(messageID)", "after": "\(after)"])
        }
        await confirmReceipts()
        return announced
    }

    // MARK: Pushes from the app (`PushSource.external`)

    /// A push the host app received through a push service of its own: Beiwe's data fields (`type`, `survey_ids`,
    /// `sent_time`, `nonce`, `survey_uuids_dict`). Handled as a relay push is (de-duplicated; each survey fetched and
    /// stored, or withdrawn; a transient failure retried in the background), and acknowledged to nobody.
    /// - Returns: the surveys this push made available, the same ones ``SurveyClientEvent/surveyAvailable(_:)``
    ///   announces: a new survey, and one already pending that the push gave a further occurrence; not one whose
    ///   earlier answers are still being uploaded (announced once they are accepted), nor one fetched later by a retry.
    /// - Throws: `bad_push` for fields that are not a survey push, `closed`.
    @discardableResult
    public func receive(push data: [String: String]) async throws(SurveyClientError) -> [StoredSurvey] {
        guard !lifecycle.isClosed else { throw .closed }
        let push: SurveyPush
        do { push = try SurveyPush(dataFields: data) } catch {
            throw SurveyClientError(code: SurveyClientError.Code.badPush.rawValue, message: "\(error)")
        }
        let messageID = "external-" + (push.nonce.isEmpty ? UUID().uuidString.lowercased() : push.nonce)
        switch intake.received(messageID: messageID, push: push, nonceSeen: !push.nonce.isEmpty && state.seenNonces.contains(push.nonce),
                               handled: handledUUIDs()) {
        case .duplicate:
            emit(.duplicateIgnored(messageID: messageID))
            return []
        case .inProgress:
            return []
        case .fetch(let surveys):
            emit(.pushReceived(messageID: messageID, surveyIDs: push.surveyIDs, sentTime: push.sentTime))
            record(category: "survey", name: "push_received", extra: ["surveys": String(push.surveyIDs.count)])
            return await attempt(messageID: messageID, surveys: surveys)
        }
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
    func startIntakeRetries() {
        runtime.intakeRetry.send(.begin(firstWait: .zero))
    }

    /// Runs the retries that are due; returns how long until the next one (at most a second).
    func runDueRetries() async -> Duration {
        for (messageID, surveys) in intake.takeDue(now: .now) {
            await attempt(messageID: messageID, surveys: surveys)
        }
        guard let next = intake.nextDue else { return .seconds(1) }
        return max(.milliseconds(10), min(.seconds(1), next - .now))
    }

    func ack(_ id: String) async {
        guard let token = state.relayToken, let relayURL = configuration.relayURL,
              let request = try? TransportRequest.json("\(relayURL)/v1/devices/\(token)/ack", body: RelayWire.AckRequest(ids: [id]))
        else { return }
        _ = try? await http.send(request)
    }


    /// The spec of a pushed survey, or nil when the server says the survey is gone. Our mock server answers
    /// `/download_survey` (404 `survey_not_found`: gone); a server without that route (Beiwe: its 404 page) is asked
    /// for the study's list once (`/download_surveys`, kept in `listed` for the rest of the push), as Beiwe's apps do,
    /// and a survey missing from the list is gone. The missing route is remembered (``ServerRoutes``).
    func fetchPushed(surveyID: String, uuids: [String], listed: inout [String: SurveyEntry]?) async throws(SurveyClientError) -> SurveyEntry? {
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
    func storePushed(_ entry: SurveyEntry, uuids: [String], sentTime: String) throws(SurveyClientError) -> StoredSurvey {
        var stored = StoredSurvey(entry: entry, scheduleUUIDs: uuids, sentTime: sentTime, receivedAt: WireTime.format(now(), milliseconds: true))
        if let existing = files.read(StoredSurvey.self, from: files.surveyURL(entry.id)) {
            // Still unanswered from an earlier push: keep its time, add the new occurrences.
            stored.receivedAt = existing.receivedAt
            stored.scheduleUUIDs = existing.scheduleUUIDs + uuids.filter { !existing.scheduleUUIDs.contains($0) }
        }
        try writeSurvey(stored)
        return stored
    }
}
