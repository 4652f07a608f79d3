import Foundation
import SurveyWire
import Transport

/// Glean's upload queue (reference §4): pending pings in order (deletion requests first) under the quotas and the
/// maximum age, each sent by ``PingUploadMachine``'s decision, the rate limit's wake-up, and what each answer means.
extension SurveyClient {
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

    /// Uploads again once the rate limiter's window ends (to the millisecond): the wake loop calls ``pingWakeDue()``.
    func schedulePingWake(after wait: Duration) {
        runtime.pingWake.send(.schedule(after: wait))
    }

    /// The rate limit's window ended: the queue is walked again.
    func pingWakeDue() async {
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
}
