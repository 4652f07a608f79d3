import Foundation
import SurveyWire
import Transport

/// One push's journey from the server's schedule to the device's upload, joined from the server's push log and request
/// journal, the relay's per-message trace, the server's decrypted submissions and (optionally) the device's own events:
/// `survey-cli trace`. What a person wants when "the survey never arrived".
public struct PushTrace: Codable, Sendable {
    /// One step, in order: `scheduled`, `sent`, `accepted`, `stored`, `delivered`, `acked`, `fetched`, `answered`,
    /// `uploaded`, `decrypted`.
    public struct Step: Codable, Sendable, Equatable {
        /// The step's name.
        public var step: String
        /// When it happened (RFC 3339), by the clock of the process that saw it.
        public var at: String
        /// Which process saw it: `mock-server`, `push-relay` or `device`.
        public var process: String
        /// A detail, such as a status or a message id.
        public var detail: String?
    }

    /// The push's uuid.
    public var push: String
    /// The participant it went to.
    public var participant: String
    /// The steps, in order.
    public var steps: [Step]
    /// The first expected step that did not happen (nil: the journey completed).
    public var stoppedAt: String?

    enum CodingKeys: String, CodingKey { case push, participant, steps, stoppedAt = "stopped_at" }

    /// The steps every journey has, in order (`stored` happens only for a device that was not connected, and `answered`
    /// is known only from the device's directory).
    public static let order = ["scheduled", "sent", "accepted", "stored", "delivered", "acked", "fetched", "answered", "uploaded", "decrypted"]
    static let optional: Set<String> = ["stored", "answered"]

    /// Reads every source and joins them. `push` picks one push; otherwise the participant's latest.
    public static func make(server: String, relay: String, participant: String?, push: String?, deviceDirectory: URL?,
                            http: TransportClient) async throws -> PushTrace {
        let admin = AdminClient(baseURL: server, http: http)
        let control = RelayControlClient(baseURL: relay, http: http)
        let entry: AdminWire.PushLogEntry
        if let push {
            entry = try await admin.push(push)
        } else if let participant {
            let who = try await admin.participant(participant)
            guard let latest = try await admin.pushes(study: who.studyID, patient: participant).last else {
                throw APIFailure(status: 404, code: "no_push", body: "participant \(participant) has no push in the send log yet")
            }
            entry = latest
        } else {
            throw APIFailure(status: 400, code: "usage", body: "give --participant or --push")
        }
        let who = try await admin.participant(entry.patientID)
        var steps: [Step] = [Step(step: "scheduled", at: entry.dueAt, process: "mock-server",
                                  detail: "surveys \(entry.surveyIDs.joined(separator: ",")), \(entry.scheduleUUIDs.count) occurrence(s)")]
        guard let sentAt = entry.sentAt else {
            let reason = [entry.status, entry.relayStatus.map { "relay \($0)" }, entry.relayReason].compactMap { $0 }.joined(separator: ", ")
            return PushTrace(push: entry.uuid, participant: entry.patientID, steps: steps, stoppedAt: "sent (\(reason))")
        }
        steps.append(Step(step: "sent", at: sentAt, process: "mock-server", detail: "relay \(entry.relayStatus.map(String.init) ?? "-")"))

        // The relay's milestones of this message (matched by the id the relay gave it).
        if let messageID = entry.relayMessageID, let token = who.pushToken {
            for item in try await control.trace(token: token) where item["message_id"]?.stringValue == messageID {
                guard let event = item["event"]?.stringValue, let millis = item["at"]?.numberValue else { continue }
                let at = WireTime.format(Date(timeIntervalSince1970: millis / 1000), milliseconds: true)
                steps.append(Step(step: event, at: at, process: "push-relay", detail: item["detail"]?.stringValue))
            }
        }
        let since = WireTime.parse(sentAt) ?? .distantPast
        func after(_ text: String) -> Bool { (WireTime.parse(text) ?? .distantPast) >= since.addingTimeInterval(-1) }

        // The device's fetch and upload, as the server's journal saw them.
        let journal = try await admin.requests(limit: 1000).reversed().filter { $0.participant == entry.patientID && after($0.at) }
        // `/download_survey`, or `/download_surveys` against `--profile beiwe` (Beiwe has no per-survey route).
        if let fetch = journal.first(where: { $0.path.hasPrefix("/download_survey") && $0.status == 200 }) {
            steps.append(Step(step: "fetched", at: fetch.at, process: "mock-server", detail: "\(fetch.path) \(fetch.status)"))
        }
        if let device = deviceDirectory {
            for event in Self.deviceEvents(device) where event.category == "survey" && event.name == "submitted" {
                let at = WireTime.format(Date(timeIntervalSince1970: Double(event.timestampMillis) / 1000), milliseconds: true)
                guard after(at), entry.surveyIDs.contains(event.extra?["survey_id"] ?? "") || event.extra?["survey_id"] == nil else { continue }
                steps.append(Step(step: "answered", at: at, process: "device", detail: event.extra?["survey_id"]))
                break
            }
        }
        if let upload = journal.first(where: { $0.path.hasPrefix("/upload") }) {
            steps.append(Step(step: "uploaded", at: upload.at, process: "mock-server", detail: "\(upload.path) \(upload.status)"))
        }
        let submissions = try await admin.submissions(study: who.studyID, patient: entry.patientID)
        if let done = submissions.first(where: { entry.surveyIDs.contains($0.surveyID) && after($0.receivedAt) }) {
            steps.append(Step(step: "decrypted", at: done.receivedAt, process: "mock-server", detail: "\(done.answers.count) answer(s), \(done.fileName)"))
        }

        // In journey order (by time within the same step kind), keeping the first of each step.
        var seen: Set<String> = []
        steps = steps.filter { seen.insert($0.step).inserted }
            .sorted { (Self.order.firstIndex(of: $0.step) ?? 99) < (Self.order.firstIndex(of: $1.step) ?? 99) }
        let reached = Set(steps.map(\.step))
        var stopped = Self.order.first { !reached.contains($0) && !optional.contains($0) }
        if let last = steps.last(where: { $0.step == "dropped" || $0.step == "expired" }) {
            stopped = "\(last.step) at the relay" + (last.detail.map { " (\($0))" } ?? "")
        }
        if let upload = steps.first(where: { $0.step == "uploaded" }), upload.detail?.hasSuffix(" 200") == false {
            stopped = "uploaded (the server answered \(upload.detail ?? ""))"
        }
        return PushTrace(push: entry.uuid, participant: entry.patientID, steps: steps, stoppedAt: stopped)
    }

    /// The device's telemetry events still on disk (recorded and not yet sent as pings).
    static func deviceEvents(_ directory: URL) -> [DeviceEvent] {
        let telemetry = directory.appendingPathComponent("telemetry")
        let files = (try? FileManager.default.contentsOfDirectory(at: telemetry, includingPropertiesForKeys: nil)) ?? []
        var events: [DeviceEvent] = []
        for file in files where file.pathExtension == "jsonl" {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                if let event = try? WireJSON.decode(DeviceEvent.self, from: Data(line.utf8)) { events.append(event) }
            }
        }
        return events.sorted { $0.timestampMillis < $1.timestampMillis }
    }

    struct DeviceEvent: Codable {
        var timestampMillis: Int64
        var category: String
        var name: String
        var extra: [String: String]?
    }

    /// The timeline as text: each step with the time since the first and since the step before.
    public func text() -> String {
        var lines = ["push \(push) for \(participant)"]
        let times = steps.map { WireTime.parse($0.at) }
        let start = times.first.flatMap { $0 }
        for (index, step) in steps.enumerated() {
            var since = ""
            if let start, let t = times[index] {
                since = String(format: "%+10.3f s", t.timeIntervalSince(start))
                if index > 0, let previous = times[index - 1] { since += String(format: "  (%+.3f s)", t.timeIntervalSince(previous)) }
            }
            lines.append("  \(step.at)  \(since)  \(step.step.padding(toLength: 9, withPad: " ", startingAt: 0))  \(step.process)"
                         + (step.detail.map { "  \($0)" } ?? ""))
        }
        lines.append(stoppedAt.map { "  stopped at: \($0)" } ?? "  complete")
        return lines.joined(separator: "\n")
    }
}
