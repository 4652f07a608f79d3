import Foundation
import SurveyWire
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Glean's telemetry pipeline (reference §4): events on disk, `events` / `baseline` / `deletion-request` pings with
/// persisted sequence numbers, an upload queue with quotas, a rate limit and a maximum age; and the MMA analytics
/// surface (reference §5) recorded through it.
extension SurveyClient {
    /// The client id Glean reports while upload is disabled.
    public static let disabledClientID = "c0ffeec0-ffee-c0ff-eec0-ffeec0ffeec0"
    /// Glean truncates event extra values to this many bytes.
    static let maxExtraValueBytes = 500

    /// Whether telemetry is collected and uploaded (the stored choice, else the configuration's).
    public var isUploadEnabled: Bool { state.uploadEnabled ?? configuration.telemetry.uploadEnabled }

    // MARK: Recording

    /// Records a telemetry event (appended to disk at once). An `events` ping with reason `max_capacity` is made once
    /// ``SurveyClientConfiguration/telemetryBatchSize`` (or ``TelemetryConfiguration/maxEvents``, the smaller) events wait. Extra values longer than 500 bytes are truncated,
    /// as Glean does. Nothing is recorded while upload is disabled.
    ///
    /// Synchronous and callable from any thread without `await`: the line is appended under the event log's own lock,
    /// not through the client's actor (a few microseconds; `Benchmarks/scripts/sdk.sh` measures it).
    public nonisolated func record(category: String, name: String, extra: [String: String]? = nil) {
        // After `close()` the directory is another client's: nothing is written.
        guard !files.isReleased else { return }
        var extra = extra
        if extra?.values.contains(where: { $0.utf8.count > Self.maxExtraValueBytes }) == true { extra = extra?.mapValues(Self.truncated) }
        let appended: EventLog.Appended
        do {
            appended = try eventLog.append(.init(timestampMillis: WireTime.epochMillis(now()), category: category, name: name, extra: extra),
                                           batchSize: min(configuration.telemetryBatchSize, configuration.telemetry.maxEvents))
        } catch {
            logger.warning("telemetry event not recorded", metadata: ["error": "\(error)"])
            return
        }
        if case .written(_, batchDue: true) = appended {
            // Once per batch: the actor makes the ping, as a loop of the client's task group (`close()` awaits it; after
            // `close()` the group starts nothing).
            background.spawn { [weak self] in await self?.startBatch() }
        }
    }

    /// Makes the `max_capacity` ping in the background unless one is being made.
    func startBatch() {
        guard !loops.isRunning(.batch), !isClosed else { return }
        loops.started(.batch, background.spawn { [weak self] in
            _ = try? await self?.submitEventsPing(reason: "max_capacity")
            await self?.batchEnded()
        })
    }

    func batchEnded() { _ = loops.take(.batch) }

    static func truncated(_ value: String) -> String {
        guard value.utf8.count > maxExtraValueBytes else { return value }
        var end = value.utf8.index(value.utf8.startIndex, offsetBy: maxExtraValueBytes)
        while end > value.startIndex, !value.unicodeScalars.indices.contains(end) { end = value.utf8.index(before: end) }
        return String(value[..<end])
    }

    /// Packs waiting events into an `events` ping (reason `flush`: the app asked) and uploads every pending ping.
    /// - Returns: the new ping's document id, nil when no event was waiting.
    /// - Throws: `transport` or `telemetry_failed` when the server could not take a ping; it stays queued and is
    ///   retried in the background. `closed` after ``close()``.
    @discardableResult
    public func flushTelemetry() async throws(SurveyClientError) -> String? {
        guard !isClosed else { throw .closed }
        return try await submitEventsPing(reason: "flush")
    }

    /// Makes an `events` ping of the waiting events for `reason` and uploads the queue.
    @discardableResult
    func submitEventsPing(reason: String) async throws(SurveyClientError) -> String? {
        let id = try makeEventsPing(reason: reason)
        do {
            try await uploadPings()
        } catch {
            scheduleUploadRetry()
            throw error
        }
        return id
    }

    /// Seals the open event log as ping number `pingSeq` and writes the ping. Synchronous (no suspension), so two
    /// callers never interleave.
    func makeEventsPing(reason: String) throws(SurveyClientError) -> String? {
        guard isUploadEnabled else { return nil }
        let seq = state.pingSeq
        guard let sealed = try eventLog.seal(seq: seq) else { return nil }
        var documentID: String?
        let batch = EventLog.events(in: sealed)
        if batch.skipped > 0 { logger.warning("skipped unreadable telemetry events", metadata: ["count": "\(batch.skipped)"]) }
        if !batch.events.isEmpty {
            let id = PingBuilder.documentID(clientID: state.clientID, pingName: "events", seq: seq)
            let ping = PingBuilder.ping(events: batch.events, seq: seq, clientID: state.clientID, configuration: configuration,
                                        now: now(), reason: reason, firstRunDate: firstRunDate())
            try files.write(PendingPing(documentID: id, pingName: "events", body: ping, createdMillis: WireTime.epochMillis(now())),
                            to: files.pingURL(id))
            documentID = id
        }
        // The next seq is saved before the batch goes: a crash in between makes this same ping again.
        state.pingSeq = seq + 1
        try save()
        eventLog.dropSealed(before: seq + 1)
        return documentID
    }

    /// Writes a ping without events (`baseline`, `deletion-request`) with the next number of its name. A file left
    /// by a crash that came before its number was saved keeps that number (no gap, nothing overwritten).
    @discardableResult
    func makePing(_ name: String, reason: String, metrics: JSONValue? = nil, clientID: String? = nil,
                  directory: URL? = nil) throws(SurveyClientError) -> String {
        let clientID = clientID ?? state.clientID
        let directory = directory ?? files.pingsURL
        var seq = state.seqs?[name] ?? 0
        func url(_ seq: Int) -> URL { files.pingURL(PingBuilder.documentID(clientID: clientID, pingName: name, seq: seq), in: directory) }
        while FileManager.default.fileExists(atPath: url(seq).path) { seq += 1 }
        let id = PingBuilder.documentID(clientID: clientID, pingName: name, seq: seq)
        let ping = PingBuilder.ping(events: [], seq: seq, clientID: clientID, configuration: configuration, now: now(),
                                    reason: reason, firstRunDate: firstRunDate(), metrics: metrics)
        try files.write(PendingPing(documentID: id, pingName: name, body: ping, createdMillis: WireTime.epochMillis(now())), to: url(seq))
        state.seqs = (state.seqs ?? [:]).merging([name: seq + 1]) { _, new in new }
        try save()
        return id
    }

    // MARK: Upload

    /// Pings waiting, read once: deletion requests first, then the rest oldest first, after the quotas and the maximum
    /// age have deleted what they rule out.
    func pendingPings() -> [(URL, PendingPing)] {
        let requests = files.list(PendingPing.self, in: files.deletionRequestsURL)
        guard isUploadEnabled else { return requests }
        let pings = withinQuotas(files.list(PendingPing.self, in: files.pingsURL))
        return requests + pings.sorted { ($0.created, $0.ping.documentID) < ($1.created, $1.ping.documentID) }.map { ($0.url, $0.ping) }
    }

    static func modified(_ url: URL) -> Int64 {
        let date = (try? FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date) ?? Date()
        return Int64(date.timeIntervalSince1970 * 1000)
    }

    /// Deletes the pings the quotas and the maximum age rule out (never deletion requests), counting each by reason;
    /// returns the rest with their creation times.
    func withinQuotas(_ pings: [(URL, PendingPing)]) -> [(url: URL, ping: PendingPing, created: Int64)] {
        let dated = pings.map { (url: $0.0, ping: $0.1, created: $0.1.createdMillis ?? Self.modified($0.0)) }
        let entries = dated.map { entry in
            PingQuota.Entry(id: entry.ping.documentID, bytes: (try? FileManager.default.attributesOfItem(atPath: entry.url.path)[.size] as? Int) ?? 0,
                            createdMillis: entry.created)
        }
        let removed = PingQuota.overflow(entries, nowMillis: WireTime.epochMillis(now()), configuration: configuration.telemetry)
        guard !removed.isEmpty else { return dated }
        let gone = Set(removed.map(\.id))
        for entry in dated where gone.contains(entry.ping.documentID) { files.remove(entry.url) }
        for (_, reason) in removed { countDropped(reason) }
        logger.warning("deleted pending pings", metadata: ["count": "\(removed.count)", "reasons": "\(Set(removed.map(\.reason)).sorted())"])
        try? save()
        return dated.filter { !gone.contains($0.ping.documentID) }
    }

    func countDropped(_ reason: String) {
        state.droppedPings = (state.droppedPings ?? [:]).merging([reason: 1], uniquingKeysWith: +)
    }

    func retryPings() async {
        if !(await retryPingsOnce()) { scheduleUploadRetry() }
    }

    /// Tries the ping queue once; true when nothing is left to retry (empty, or only waiting for the rate limit).
    func retryPingsOnce() async -> Bool {
        // Nowhere to send them in this run (no endpoint, or it has no ingestion route): nothing to retry. They stay
        // queued under their quotas; without this the outbox loop retried them every minute for as long as it ran.
        guard configuration.telemetryURL != nil, !pingUploads.routeMissing else { return true }
        try? await uploadPings()
        return pendingPings().isEmpty || pingUploads.wakeScheduled
    }

    /// Uploads the queue in order until it is empty, a ping fails (thrown; the caller retries with backoff), the rate
    /// limit is reached (a wake-up is scheduled for the end of the window) or the endpoint turns out to have no
    /// ingestion route. ``PingUploadMachine`` decides for each ping.
    func uploadPings() async throws(SurveyClientError) {
        // No telemetry endpoint (a real Beiwe server has none): pings stay queued under their quotas.
        guard configuration.telemetryURL != nil, !pingUploads.routeMissing else { return }
        for (url, pending) in pendingPings() {
            let id = pending.documentID
            switch pingUploads.event(.next(id: id, at: .now)) {
            case .upload:
                break
            case .pause(let wake):
                if let wake { schedulePingWake(after: wake) }
                return
            case .halt:
                return
            default:
                continue
            }
            let outcome: PingUploadMachine.Outcome
            do { outcome = try await upload(ping: pending, at: url) } catch {
                pingUploadFinished(id, .failed)
                throw error
            }
            pingUploadFinished(id, outcome)
            if outcome == .routeMissing { return }
        }
    }

    /// An upload ended: the last one in flight lets every pass waiting in ``pingUploadsSettle(within:)`` go on.
    func pingUploadFinished(_ id: String, _ outcome: PingUploadMachine.Outcome) {
        guard pingUploads.event(.finished(id: id, outcome)) == .settled else { return }
        let waiting = pingUploadsSettled
        pingUploadsSettled = []
        for signal in waiting { signal.fire() }
    }

    /// Returns once no ping upload is in flight (another pass's), or after `limit`.
    func pingUploadsSettle(within limit: Duration) async {
        guard !pingUploads.inFlight.isEmpty else { return }
        let settled = OneShot()
        pingUploadsSettled.append(settled)
        await withDiscardingTaskGroup { group in
            group.addTask {
                try? await Task.sleep(for: limit)
                settled.fire()
            }
            await settled.wait()
            group.cancelAll()
        }
        pingUploadsSettled.removeAll { $0 === settled }
    }

    /// Glean's `first_run_date` of this storage: the day it first made a ping, kept in the state.
    func firstRunDate() -> String {
        if let known = state.firstRunDate { return known }
        let zone = TimeZone(identifier: configuration.timeZone) ?? TimeZone(identifier: "UTC")!
        let date = PingBuilder.gleanDate(now(), timeZone: zone)
        state.firstRunDate = date
        return date
    }

    /// Uploads one ping; throws when it must be retried (no answer, or the server failed).
    func upload(ping pending: PendingPing, at url: URL) async throws(SurveyClientError) -> PingUploadMachine.Outcome {
        guard FileManager.default.fileExists(atPath: url.path) else { return .done }  // sent meanwhile
        var ping = pending.body
        // Queued by an older version, without the fields the server now requires (Glean's pipeline does): added.
        if ping.clientInfo.architecture == nil { ping.clientInfo.architecture = HostOS.architecture }
        if ping.clientInfo.firstRunDate == nil { ping.clientInfo.firstRunDate = firstRunDate() }
        var body: [UInt8]
        do { body = [UInt8](try WireJSON.encode(ping)) } catch {
            files.remove(url)
            return .done
        }
        guard let telemetryURL = configuration.telemetryURL else { return .failed }
        var request = TransportRequest(method: "POST", url: "\(telemetryURL)/submit/\(Self.sanitizedAppID(configuration.appID))/\(pending.pingName)/1/\(pending.documentID)",
                                  headers: [("Content-Type", "application/json; charset=utf-8"),
                                            ("X-Telemetry-Agent", "survey-sdk/\(Self.sdkVersion) (Swift on Linux)"),
                                            ("Date", WireTime.httpDate(now()))], body: body)
        if configuration.gzipTelemetry {
            body = Gzip.compress(body)
            request.body = body
            request.headers.append(("Content-Encoding", "gzip"))
        }
        if body.count > configuration.telemetry.maxPingBodyBytes {
            files.remove(url)
            countDropped("too_large")
            try? save()
            emit(.error(SurveyClientError(code: "telemetry_too_large", message: "ping \(pending.documentID) is \(body.count) bytes; the limit is \(configuration.telemetry.maxPingBodyBytes)")))
            return .done
        }
        let response: TransportResponse
        do { response = try await http.send(request) } catch {
            throw SurveyClientError.transport("telemetry", error)
        }
        switch response.status {
        case 200..<300:
            files.remove(url)
            emit(.telemetrySent(documentID: pending.documentID, events: pending.body.events.count, ping: pending.pingName))
            return .done
        case 404, 405:
            // No ingestion route there (a study server without one): the ping is kept, and nothing more is sent this run.
            emit(.error(SurveyClientError(code: "telemetry_route_missing",
                                          message: "\(telemetryURL) has no telemetry route (\(response.status)); pings stay queued")))
            return .routeMissing
        case 400..<500:
            // The server will never take it; Glean deletes such pings too.
            files.remove(url)
            countDropped("rejected")
            try? save()
            emit(.error(SurveyClientError(code: "telemetry_rejected", message: response.text, status: response.status)))
            return .done
        default:
            throw SurveyClientError(code: "telemetry_failed", message: "submit answered \(response.status)", status: response.status)
        }
    }

    /// Uploads again once the rate limiter's window ends (to the millisecond).
    func schedulePingWake(after wait: Duration) {
        loops.started(.pingWake, background.spawn { [weak self] in
            try? await Task.sleep(for: wait)
            guard let client = self, !Task.isCancelled else { return }
            await client.pingWakeDue()
        })
    }

    /// The rate limit's window ended: the queue is walked again.
    func pingWakeDue() async {
        _ = loops.take(.pingWake)
        guard pingUploads.event(.wakeDue) == .walk else { return }
        await retryPings()
    }

    /// Glean's path form of an application id: lowercased, each run of other characters than letters and digits
    /// turned into one `-`.
    static func sanitizedAppID(_ id: String) -> String {
        var out = ""
        var dash = false
        for scalar in id.lowercased().unicodeScalars {
            if (scalar >= "a" && scalar <= "z") || (scalar >= "0" && scalar <= "9") {
                out.unicodeScalars.append(scalar)
                dash = false
            } else if !dash {
                out.append("-")
                dash = true
            }
        }
        return out
    }

    // MARK: Opting out

    /// Turns telemetry collection and upload on or off, and remembers the choice.
    ///
    /// Turning it off deletes the waiting events and pings, stops recording, sends one `deletion-request` ping (reason
    /// `set_upload_enabled`) for the current client id, and reports ``disabledClientID`` from then on. Turning it on
    /// again starts a new client id.
    public func setUploadEnabled(_ enabled: Bool) async {
        // Closed: the directory may be another client's (deleting "our" events and pings would delete its).
        guard !isClosed else { return }
        guard enabled != isUploadEnabled else {
            state.uploadEnabled = enabled
            try? save()
            return
        }
        if enabled {
            state.uploadEnabled = true
            state.clientID = UUID().uuidString.lowercased()
            try? save()
            if session.isActive { _ = try? makePing("baseline", reason: "active") }
        } else {
            disableUpload(reason: "set_upload_enabled")
        }
        try? await uploadPings()
        if !pendingPings().isEmpty { scheduleUploadRetry() }
    }

    /// Deletes everything collected, queues the deletion request and switches to the disabled client id.
    func disableUpload(reason: String) {
        let old = state.clientID
        // Recording stops before the log goes, so an event recorded meanwhile on another thread is not kept.
        eventLog.setRecording(false)
        eventLog.deleteAll()
        for (url, _) in files.list(PendingPing.self, in: files.pingsURL) { files.remove(url) }
        do {
            try makePing("deletion-request", reason: reason, clientID: old, directory: files.deletionRequestsURL)
        } catch {
            logger.error("deletion-request ping not written", metadata: ["error": "\(error)"])
        }
        state.uploadEnabled = false
        state.clientID = Self.disabledClientID
        try? save()
    }

    /// At start: the app's current choice (the configuration) against the stored one. Upload disabled while the client
    /// was not running sends the deletion request now (reason `at_init`), as Glean does.
    func applyUploadChoiceAtStart() {
        let wanted = configuration.telemetry.uploadEnabled
        switch (state.uploadEnabled, wanted) {
        case (true?, false):
            disableUpload(reason: "at_init")
        case (nil, false) where state.pingSeq > 0 || eventsWaiting > 0:
            // Collected by a version that did not store the choice.
            disableUpload(reason: "at_init")
        case (false?, true):
            state.uploadEnabled = true
            state.clientID = UUID().uuidString.lowercased()
            try? save()
        case (nil, let choice):
            state.uploadEnabled = choice
            if !choice { state.clientID = Self.disabledClientID }
            try? save()
        default:
            break
        }
    }
}
