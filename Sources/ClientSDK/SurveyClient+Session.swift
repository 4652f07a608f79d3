import Foundation
import SurveyWire
import Transport
import Glibc

/// The app session (foreground between start or resume and pause or stop) with its pings and MMA heartbeat, MMA
/// analytics, and the receipts of pushed surveys (Beiwe's `notification_uuids`).
extension SurveyClient {
    // MARK: Sessions

    /// The app came to the foreground: a `baseline` ping (`active`), MMA `resumeSession`, and the MMA heartbeat.
    /// - Throws: `closed` after ``close()`` (no session: its pings would be made and sent from a directory that may be
    ///   another client's).
    public func resume() async throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
        await beginSession(startup: false)
    }

    /// The app went to the background: MMA `pauseSession`, a `baseline` ping (`inactive`, with the session's length)
    /// and an `events` ping (`inactive`), then an upload.
    public func pause() async {
        await endSession()
    }

    /// True between ``start()`` or ``resume()`` and ``pause()`` or ``stop()``.
    public var isActive: Bool { session.isActive }

    /// First thing at start, before anything new is recorded: the app's upload choice, a `dirty_startup` baseline
    /// ping when the last run did not end cleanly, and an `events` ping (`startup`) with the events it left.
    func closePreviousRun() {
        guard !session.isActive else { return }
        applyUploadChoiceAtStart()
        guard isUploadEnabled else { return }
        if state.dirty == true {
            _ = try? makePing("baseline", reason: "dirty_startup")
            state.dirty = false
            try? save()
        }
        if eventsWaiting > 0 || FileManager.default.fileExists(atPath: eventLog.sealedURL(state.pingSeq).path) {
            _ = try? makeEventsPing(reason: "startup")
        }
    }

    func beginSession(startup: Bool) async {
        guard case .open(let number, _) = session.event(.began(startup: startup, id: UUID().uuidString.lowercased(), at: now())) else { return }
        if startup {
            state.launches = (state.launches ?? 0) + 1
            if state.mmaDeviceID == nil { state.mmaDeviceID = UUID().uuidString.lowercased() }
        }
        state.dirty = true
        try? save()
        if isUploadEnabled { _ = try? makePing("baseline", reason: "active") }
        if startup {
            recordMMA("start", ["userAttributes": Self.jsonText(state.userAttributes ?? [:]), "systemName": configuration.platform == .ios ? "iOS" : "Android",
                                "locale": Locale.current.identifier, "timezone": configuration.timeZone,
                                "timezoneOffsetSeconds": String(TimeZone(identifier: configuration.timeZone)?.secondsFromGMT(for: now()) ?? 0),
                                "versionName": Self.sdkVersion, "systemVersion": ProcessInfo.processInfo.operatingSystemVersionString,
                                "deviceModel": "survey-sdk"])
            let launches = state.launches ?? 1
            if launches == 1 { recordTrack("E_First_Run") }
            if launches == 2 { recordTrack("E_Second_Run") }
            recordTrack("E_Opened_App")
        } else {
            recordMMA("resumeSession", [:])
        }
        startSessionHeartbeat(session: number)
        try? await uploadPings()
        if !pendingPings().isEmpty { scheduleUploadRetry() }
    }

    func endSession() async {
        guard case .close(let seconds) = session.event(.ended(at: now())) else { return }
        recordMMA("pauseSession", [:])
        runtime.sessionHeartbeat.haltSoon()
        if isUploadEnabled {
            let metrics: JSONValue = ["timespan": ["glean.baseline.duration": ["time_unit": "second", "value": .number(Double(seconds))]]]
            _ = try? makePing("baseline", reason: "inactive", metrics: metrics)
            _ = try? makeEventsPing(reason: "inactive")
        }
        state.dirty = false
        try? save()
        try? await uploadPings()
        // Uploads another pass had in flight (skipped above) get up to 2 s to finish; then what is left goes once more.
        await pingUploadsSettle(within: .seconds(2))
        try? await uploadPings()
    }

    /// The MMA heartbeat of session `number`, every ``TelemetryConfiguration/sessionHeartbeat``; its ticks after that
    /// session ended record nothing and end the loop (``SessionMachine``).
    func startSessionHeartbeat(session number: Int) {
        guard let interval = configuration.telemetry.sessionHeartbeat else { return }
        // The last session's loop ends first (messages are handled in order).
        runtime.sessionHeartbeat.haltSoon()
        runtime.sessionHeartbeat.send(.begin(firstWait: interval, tag: number))
    }

    /// A tick of session `number`'s heartbeat loop: records MMA `heartbeat` while that session is open; false ends the loop.
    func sessionHeartbeatDue(session number: Int) -> Bool {
        guard session.event(.heartbeatDue(session: number)) == .heartbeat else { return false }
        recordMMA("heartbeat", [:])
        return true
    }

    // MARK: MMA analytics

    /// Tracks an MMA event (Leanplum's `track`): recorded as telemetry event `mma.track` with the seed's fields
    /// `event`, `info` (default `""`), `value` (default `0.0`) and `messageId`, plus `userId`, `deviceId`,
    /// `sdkVersion` and `time` (epoch seconds).
    /// - Throws: `closed` after ``close()``.
    public func track(_ event: String, info: String = "", value: Double = 0.0, messageID: String? = nil) throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
        recordTrack(event, info: info, value: value, messageID: messageID)
    }

    /// Records `mma.track` (the session's own `E_Opened_App`, ... too).
    func recordTrack(_ event: String, info: String = "", value: Double = 0.0, messageID: String? = nil) {
        var fields = ["event": event, "info": info, "value": String(value)]
        if let messageID { fields["messageId"] = messageID }
        recordMMA("track", fields)
    }

    /// Sets MMA user attributes (merged into those set before, kept on disk, and sent with every `start`); recorded
    /// as `mma.setUserAttributes`.
    /// - Throws: `closed` after ``close()``; `storage` when they could not be saved (nothing is recorded then).
    public func setUserAttributes(_ attributes: [String: String]) throws(SurveyClientError) {
        guard !isClosed else { throw .closed }
        let before = state.userAttributes
        state.userAttributes = (state.userAttributes ?? [:]).merging(attributes) { _, new in new }
        do throws(SurveyClientError) {
            try save()
        } catch {
            state.userAttributes = before
            throw error
        }
        recordMMA("setUserAttributes", ["userAttributes": Self.jsonText(state.userAttributes ?? [:])])
    }

    /// The MMA user attributes set so far.
    public var userAttributes: [String: String] { state.userAttributes ?? [:] }

    /// The random MMA device id (also the `userId`, as Firefox's integration sets it).
    public var analyticsDeviceID: String {
        if let id = state.mmaDeviceID { return id }
        let id = UUID().uuidString.lowercased()
        state.mmaDeviceID = id
        try? save()
        return id
    }

    func recordMMA(_ action: String, _ fields: [String: String]) {
        guard isUploadEnabled else { return }
        let device = analyticsDeviceID
        var extra = fields
        extra["userId"] = device
        extra["deviceId"] = device
        extra["sdkVersion"] = Self.sdkVersion
        extra["time"] = String(format: "%.3f", now().timeIntervalSince1970)
        record(category: "mma", name: action, extra: extra)
    }

    static func jsonText(_ object: [String: String]) -> String {
        (try? WireJSON.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: Receipts

    /// Confirms received pushes to the server (`/confirm_notifications` with `notification_uuids`, which also ride
    /// on every other request until one succeeds); confirmed ones are forgotten. A server without that route (Beiwe,
    /// which reads `notification_uuids` on every request) gets them on a `/mobile-heartbeat` instead.
    func confirmReceipts() async {
        let sent = state.pendingReceipts ?? []
        guard state.registered, !sent.isEmpty else { return }
        if !serverLacks(.confirmNotifications) {
            guard let response = try? await api.post("confirm_notifications", api.baseForm(state: state)) else { return }
            if (200..<300).contains(response.status) {
                receiptsDelivered(sent)
                return
            }
            guard serverAnswered(.confirmNotifications, response) == .missing else { return }
            logger.info("the server has no /confirm_notifications; receipts ride on /mobile-heartbeat, as Beiwe reads them")
        }
        await sendHeartbeat()
    }

    /// Forgets receipts a request carried once the server took that request.
    func receiptsDelivered(_ sent: [String]) {
        guard !sent.isEmpty else { return }
        state.pendingReceipts?.removeAll { sent.contains($0) }
        try? save()
    }
}
