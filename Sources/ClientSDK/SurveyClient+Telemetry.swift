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
            // Once per batch: the batch loop makes the ping (one at a time; after `close()` it makes none).
            runtime.batch.send(.requested)
        }
    }

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

    // MARK: Opting out

    /// Turns telemetry collection and upload on or off, and remembers the choice.
    ///
    /// Turning it off deletes the waiting events and pings, stops recording, sends one `deletion-request` ping (reason
    /// `set_upload_enabled`) for the current client id, and reports ``disabledClientID`` from then on. Turning it on
    /// again starts a new client id.
    /// - Throws: `closed` after ``close()`` (the directory may be another client's: deleting "our" events and pings
    ///   would delete its).
    public func setUploadEnabled(_ enabled: Bool) async throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
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
