import Foundation
import SurveyWire

/// A survey kept on disk from the push (or the device's schedule) that announced it until its answers are accepted.
public struct StoredSurvey: Sendable, Codable, Equatable {
    /// The spec as `/download_survey` served it, kept whole (keys this SDK does not read survive on disk).
    var entry: SurveyEntry
    /// Schedule uuids of the occurrences this survey answers.
    public var scheduleUUIDs: [String]
    /// The push's `sent_time` (Beiwe form, UTC).
    public var sentTime: String
    /// When the device stored it (RFC 3339).
    public var receivedAt: String

    /// The survey's id.
    public var surveyID: String { entry.id }
    /// The survey's display name.
    public var name: String { entry.name }
    /// `tracking_survey` or `audio_survey`.
    public var surveyType: String { entry.surveyType }
    /// The questions, in order (items of the spec that are not questions are left out).
    public var questions: [SurveyQuestion] { entry.content.compactMap(SurveyQuestion.init) }

    /// Every question that takes an answer, answered with `value` (what a simulated participant that answers on its own
    /// submits).
    public func answers(allWith value: String) -> [String: String] {
        var answers: [String: String] = [:]
        for question in questions where question.takesAnswer { answers[question.id] = value }
        return answers
    }

    init(entry: SurveyEntry, scheduleUUIDs: [String], sentTime: String, receivedAt: String) {
        self.entry = entry
        self.scheduleUUIDs = scheduleUUIDs
        self.sentTime = sentTime
        self.receivedAt = receivedAt
    }
}

/// What the client remembers between runs.
struct ClientState: Codable, Sendable {
    var deviceID: String
    var relayToken: String?
    /// Device hash of the password in force (the temporary one until registration succeeds).
    var passwordHash: String
    var registered = false
    var studyID: String?
    var scheduling: String?
    var timeZone: String?
    /// base64 DER of the study's public key.
    var publicKey: String?
    var clientID: String
    /// The first day this storage ran, as Glean writes it (`2026-11-25+00:00`); nil in states older versions wrote
    /// (set on the next ping).
    var firstRunDate: String?
    var pingSeq = 0
    /// Nonces and schedule uuids already handled, newest last (bounded).
    var seenNonces: [String] = []
    var seenUUIDs: [String] = []
    /// Old-style (device-scheduled) studies: the last downloaded survey list, how often to poll it, and the
    /// device time up to which its timings have been evaluated.
    var deviceSurveys: [SurveyEntry] = []
    var checkFrequencySeconds: Int?
    var lastSurveyCheck: String?
    var localCheckedThrough: String?
    /// Telemetry events kept here by versions before the event log (`telemetry/`); moved to the log at start.
    var pendingEvents: [PendingEvent] = []
    // Fields below were added after the first release; optional so that older state files still decode.
    /// Ping sequence numbers by ping name, for pings other than `events` (whose number is `pingSeq`).
    var seqs: [String: Int]?
    /// Pings deleted without being uploaded, by reason (`max_age`, `count_quota`, `size_quota`, `too_large`, `rejected`).
    var droppedPings: [String: Int]?
    /// The last upload choice (nil: never made; the configuration's default applies).
    var uploadEnabled: Bool?
    /// Set while a session is active; still set at start means the last run did not end cleanly (`dirty_startup`).
    var dirty: Bool?
    /// MMA: the random device id, the user attributes set so far, and how many times the client was started.
    var mmaDeviceID: String?
    var userAttributes: [String: String]?
    var launches: Int?
    /// Schedule uuids of received pushes not yet confirmed to the server (`notification_uuids`), at most
    /// ``receiptLimit`` (the oldest go first: they ride on every request).
    var pendingReceipts: [String]?
    /// The push token the study server last accepted (at registration or by `/set_fcm_token`): see ``RelayLink``.
    var announcedToken: String?

    /// The push token and whether the server holds it.
    var link: RelayLink {
        get { RelayLink(token: relayToken, announced: announcedToken) }
        set {
            relayToken = newValue.token
            announcedToken = newValue.announced
        }
    }

    static let receiptLimit = 500

    /// Adds receipts to confirm, keeping at most ``receiptLimit``.
    mutating func addReceipts(_ uuids: [String]) {
        var receipts = pendingReceipts ?? []
        receipts += uuids.filter { !receipts.contains($0) }
        if receipts.count > Self.receiptLimit { receipts.removeFirst(receipts.count - Self.receiptLimit) }
        pendingReceipts = receipts
    }

    struct PendingEvent: Codable, Sendable {
        var timestampMillis: Int64
        var category: String
        var name: String
        var extra: [String: String]?
    }

    static let seenLimit = 2000

    mutating func remember(nonce: String, uuids: [String]) {
        if !nonce.isEmpty { seenNonces.append(nonce) }
        seenUUIDs.append(contentsOf: uuids)
        if seenNonces.count > Self.seenLimit { seenNonces.removeFirst(seenNonces.count - Self.seenLimit) }
        if seenUUIDs.count > Self.seenLimit { seenUUIDs.removeFirst(seenUUIDs.count - Self.seenLimit) }
    }
}
