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
        /// When it happened in real time (RFC 3339): the servers' wall clocks, one clock for every step.
        public var at: String
        /// When it happened on the study's clock (which tests move): a push's due and send times, read from the send
        /// log, and real times shifted by the study clock's offset when the push was sent.
        public var studyAt: String?
        /// Which process saw it: `mock-server`, `push-relay` or `device`.
        public var process: String
        /// A detail, such as a status or a message id.
        public var detail: String?

        enum CodingKeys: String, CodingKey { case step, at, studyAt = "study_at", process, detail }

        /// Creates the value from its fields.
        public init(step: String, at: String, studyAt: String? = nil, process: String, detail: String? = nil) {
            self.step = step
            self.at = at
            self.studyAt = studyAt
            self.process = process
            self.detail = detail
        }
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
        let dueStudy = WireTime.parse(entry.dueAt) ?? Date()
        guard let sentText = entry.sentAt, let sentStudy = WireTime.parse(sentText) else {
            let reason = [entry.status, entry.relayStatus.map { "relay \($0)" }, entry.relayReason].compactMap { $0 }.joined(separator: ", ")
            let clock = try await admin.clock(study: who.studyID)
            let offset = (WireTime.parse(clock.now) ?? Date()).timeIntervalSince(Date())
            let step = Step(step: "scheduled", at: WireTime.format(dueStudy.addingTimeInterval(-offset), milliseconds: true), studyAt: entry.dueAt,
                            process: "mock-server",
                            detail: "surveys \(entry.surveyIDs.joined(separator: ",")), \(entry.scheduleUUIDs.count) occurrence(s)")
            return PushTrace(push: entry.uuid, participant: entry.patientID, steps: [step], stoppedAt: "sent (\(reason))")
        }

        // The relay's milestones of this message (matched by the id the relay gave it), in real time.
        let relayTrace = who.pushToken == nil ? [] : try await control.trace(token: who.pushToken)
        func milestones(_ messageID: String?) -> [(event: String, at: Date, detail: String?)] {
            guard let messageID else { return [] }
            return relayTrace.compactMap { item in
                guard item["message_id"]?.stringValue == messageID, let event = item["event"]?.stringValue,
                      let millis = item["at"]?.numberValue else { return nil }
                return (event, Date(timeIntervalSince1970: millis / 1000), item["detail"]?.stringValue)
            }
        }
        let relaySteps = milestones(entry.relayMessageID)
        // One clock: the relay took the push in real time right after the server sent it in study time, so their
        // difference is the study clock's offset then. Without a relay record, the study clock's offset now.
        let offset: TimeInterval
        if let accepted = relaySteps.first(where: { $0.event == "accepted" }) {
            offset = sentStudy.timeIntervalSince(accepted.at)
        } else {
            let clock = try await admin.clock(study: who.studyID)
            offset = (WireTime.parse(clock.now) ?? Date()).timeIntervalSince(Date())
        }
        func real(_ study: Date) -> Date { study.addingTimeInterval(-offset) }
        func step(_ name: String, real at: Date, process: String, detail: String?) -> Step {
            Step(step: name, at: WireTime.format(at, milliseconds: true), studyAt: WireTime.format(at.addingTimeInterval(offset), milliseconds: true),
                 process: process, detail: detail)
        }
        var steps: [Step] = [
            Step(step: "scheduled", at: WireTime.format(real(dueStudy), milliseconds: true), studyAt: entry.dueAt, process: "mock-server",
                 detail: "surveys \(entry.surveyIDs.joined(separator: ",")), \(entry.scheduleUUIDs.count) occurrence(s)"),
            Step(step: "sent", at: WireTime.format(real(sentStudy), milliseconds: true), studyAt: sentText, process: "mock-server",
                 detail: "relay \(entry.relayStatus.map(String.init) ?? "-")"),
        ]
        for milestone in relaySteps { steps.append(step(milestone.event, real: milestone.at, process: "push-relay", detail: milestone.detail)) }

        // What the device did about *this* push: from its delivery (or, not delivered, its acceptance) until the relay
        // took the participant's next push. Everything in real time.
        let from = relaySteps.first(where: { $0.event == "delivered" })?.at ?? relaySteps.first?.at ?? real(sentStudy)
        let later = try await admin.pushes(study: who.studyID, patient: entry.patientID)
            .filter { $0.uuid != entry.uuid && ($0.sentAt.flatMap(WireTime.parse) ?? .distantPast) > sentStudy }
        let until = later.compactMap { milestones($0.relayMessageID).first?.at }.filter { $0 > from }.min() ?? .distantFuture
        func inWindow(_ text: String) -> Date? {
            guard let t = WireTime.parse(text), t >= from.addingTimeInterval(-0.001), t < until else { return nil }
            return t
        }
        let journal = try await admin.requests(limit: 1000, participant: entry.patientID).reversed()
        let fetch = journal.first { $0.path.hasPrefix("/download_survey") && $0.status == 200 && inWindow($0.at) != nil }
        if let fetch, let at = inWindow(fetch.at) { steps.append(step("fetched", real: at, process: "mock-server", detail: "\(fetch.path) \(fetch.status)")) }
        // `answered`: the device's `survey.submitted` event for one of the push's surveys, wherever the SDK keeps it (its
        // directory, or the pings it already sent).
        var recorded: [DeviceEvent] = []
        if let device = deviceDirectory {
            recorded = Self.deviceEvents(device)
            if let clientID = Self.clientID(device) {
                recorded += Self.pingEvents(try await admin.telemetry(clientID: clientID, ping: "events"))
            }
        }
        let answered = recorded.filter { $0.category == "survey" && $0.name == "submitted" }
            .filter { entry.surveyIDs.contains($0.extra?["survey_id"] ?? "") }
            .compactMap { event -> Date? in
                let at = Date(timeIntervalSince1970: Double(event.timestampMillis) / 1000)
                return at >= from.addingTimeInterval(-0.001) && at < until ? at : nil
            }.min()
        if let answered { steps.append(step("answered", real: answered, process: "device", detail: nil)) }
        // (The SDK records `submitted` once the server took the upload, so the upload comes before it.)
        let uploadFrom = fetch.flatMap { inWindow($0.at) } ?? from
        let upload = journal.first { $0.path.hasPrefix("/upload") && (inWindow($0.at).map { $0 >= uploadFrom } ?? false) }
        if let upload, let at = inWindow(upload.at) {
            steps.append(step("uploaded", real: at, process: "mock-server", detail: "\(upload.path) \(upload.status)"))
            // The upload's answers, decrypted in the same request (the submission's time is on the study's clock).
            let submissions = try await admin.submissions(study: who.studyID, patient: entry.patientID)
            if upload.status == 200, let done = submissions.first(where: { entry.surveyIDs.contains($0.surveyID) && $0.receivedAt >= sentText }) {
                steps.append(Step(step: "decrypted", at: WireTime.format(at, milliseconds: true), studyAt: done.receivedAt, process: "mock-server",
                                  detail: "\(done.answers.count) answer(s), \(done.fileName)"))
            }
        }

        // In time order (real time; the journey's order breaks ties), keeping the first of each step.
        var seen: Set<String> = []
        steps = steps.filter { seen.insert($0.step).inserted }
            .enumerated()
            .sorted { a, b in
                let ta = WireTime.parse(a.element.at) ?? .distantPast, tb = WireTime.parse(b.element.at) ?? .distantPast
                if ta != tb { return ta < tb }
                return (Self.order.firstIndex(of: a.element.step) ?? 99, a.offset) < (Self.order.firstIndex(of: b.element.step) ?? 99, b.offset)
            }
            .map(\.element)
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

    /// The telemetry client id of a device directory (its `state.json`).
    static func clientID(_ directory: URL) -> String? {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("state.json")),
              let state = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        return state["clientID"]?.stringValue
    }

    /// The events of pings already sent, each at its absolute time (the ping's start plus the event's offset).
    static func pingEvents(_ pings: [AdminWire.StoredPing]) -> [DeviceEvent] {
        pings.flatMap { ping -> [DeviceEvent] in
            guard let start = ping.body["ping_info"]?["start_time"]?.stringValue.flatMap(WireTime.parse) else { return [] }
            return (ping.body["events"]?.arrayValue ?? []).compactMap { event in
                guard let offset = event["timestamp"]?.numberValue, let category = event["category"]?.stringValue,
                      let name = event["name"]?.stringValue else { return nil }
                var extra: [String: String] = [:]
                for (key, value) in event["extra"]?.objectValue ?? [:] { if let text = value.stringValue { extra[key] = text } }
                return DeviceEvent(timestampMillis: WireTime.epochMillis(start) + Int64(offset), category: category, name: name, extra: extra)
            }
        }
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
