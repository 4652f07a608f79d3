import Foundation
import Logging
import Scheduling
import ServerSupport
import SurveyWire

/// Where the mock server keeps its data (`--database`).
public enum StoreLocation: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite file (WAL mode); parent directories are created.
    case file(String)
    /// An in-memory SQLite database, gone when the process exits.
    case memory
    /// A PostgreSQL database: several server instances may share it.
    case postgres(PostgresURL)

    /// `:memory:`, a `postgres://` (or `postgresql://`) URL, or a path.
    public init(argument: String) throws(PostgresURL.Invalid) {
        if argument == ":memory:" {
            self = .memory
        } else if argument.hasPrefix("postgres://") || argument.hasPrefix("postgresql://") {
            self = .postgres(try PostgresURL(argument))
        } else {
            self = .file(argument)
        }
    }

    /// The path, `:memory:`, or the URL without its password.
    public var description: String {
        switch self {
        case .file(let path): path
        case .memory: ":memory:"
        case .postgres(let url): url.description
        }
    }

    /// The store's kind, as `GET /__admin/info` reports it.
    var kind: String {
        switch self {
        case .file: "sqlite"
        case .memory: "sqlite-memory"
        case .postgres: "postgres"
        }
    }
}

/// What a study is made of, read by every consumer: the study, its surveys and participants as stored.
protocol CatalogStore: Sendable {
    /// One study.
    func study(_ id: String) async throws -> StudyRecord?
    /// One survey, deleted or not.
    func survey(_ id: String) async throws -> SurveyRecord?
    /// Every survey of a study, deleted ones included.
    func allSurveys(studyID: String) async throws -> [SurveyRecord]
    /// A study's surveys that are not deleted, oldest first.
    func liveSurveys(studyID: String) async throws -> [SurveyRecord]
    /// Whether `surveyID` is one of the study's surveys (deleted ones included).
    func surveyExists(_ surveyID: String, studyID: String) async throws -> Bool
    /// One participant.
    func participant(_ id: String) async throws -> ParticipantRecord?
    /// A participant and its study, or nil when either is missing.
    func participantAndStudy(_ patientID: String) async throws -> (ParticipantRecord, StudyRecord)?
    /// A participant's intervention dates by name.
    func interventionDates(patientID: String) async throws -> [String: String]
    /// A study's intervention names, sorted.
    func studyInterventions(_ studyID: String) async throws -> [String]
}

/// What the mobile API (Beiwe's form routes) writes: registrations, tokens, device reports, uploads, heartbeats.
protocol MobileStore: CatalogStore {
    /// Keeps what a mobile request reported (absent fields keep their stored value) and its notification receipts.
    func recordDevice(_ report: DeviceReport, patientID: String) async throws
    /// Registers (or re-registers) a participant's device; returns the participant's time zone, or nil when the
    /// participant is gone. Throws `push_token_in_use` when another participant holds the token.
    func register(_ registration: Registration, report: DeviceReport) async throws -> String?
    /// Replaces a participant's push token (clearing its unregistered mark and back-off).
    func setPushToken(_ token: String, patientID: String) async throws
    /// Keeps an upload and, for survey answers, the submission (a repeated file name keeps the first).
    func storeUpload(_ upload: UploadRecord, submission: SubmissionRecord?) async throws
    /// Keeps a heartbeat and the participant's last heartbeat time.
    func recordHeartbeat(patientID: String, at: Double, message: String?) async throws
}

/// What the admin API writes: studies, their interventions, participants and surveys; and the wipe of a reset.
protocol StudyAdminStore: CatalogStore {
    /// Creates a study with its intervention names.
    func createStudy(_ record: StudyRecord, interventions: [String]) async throws
    /// Replaces a study's row (its clock).
    func updateStudy(_ record: StudyRecord) async throws
    /// Adds an intervention name (kept once).
    func addStudyIntervention(_ studyID: String, name: String) async throws
    /// Creates participants; all or none. Throws `participant_exists` when an id is taken.
    func insertParticipants(_ records: [ParticipantRecord]) async throws
    /// Sets one intervention date of a participant.
    func setInterventionDate(patientID: String, name: String, date: String) async throws
    /// Creates a survey.
    func insertSurvey(_ record: SurveyRecord) async throws
    /// Replaces a survey's row.
    func updateSurvey(_ record: SurveyRecord) async throws
    /// Marks a survey deleted.
    func deleteSurvey(_ id: String) async throws
    /// Deletes every row of every table.
    func wipe() async throws
}

/// What happened in a study, as the admin API lists it: counts, occurrences, the push log, receipts, submissions.
protocol HistoryStore: Sendable {
    /// Counts for `GET /__admin/studies/{id}/stats`.
    func stats(studyID: String) async throws -> AdminWire.StudyStats
    /// A study's occurrences (pending only unless `all`), optionally one participant's, by due time.
    func occurrences(studyID: String, patientID: String?, all: Bool) async throws -> [OccurrenceRecord]
    /// A study's push log, optionally one participant's, in the order written.
    func pushes(studyID: String, patientID: String?) async throws -> [PushRecord]
    /// One push by uuid, with its participant's reported notification uuids.
    func push(uuid: String) async throws -> (PushRecord, [String])?
    /// `patient_id + " " + uuid` of every notification receipt in the study.
    func notificationReceipts(studyID: String) async throws -> Set<String>
    /// A study's submissions, optionally one participant's, in arrival order.
    func submissions(studyID: String, patientID: String?) async throws -> [SubmissionRecord]
}

/// Glean-shaped pings and feature configurations (the telemetry and features routes, and their admin listings).
protocol TelemetryStore: Sendable {
    /// Stores a ping; false when its document id was already stored.
    func insertPing(_ record: TelemetryRecord) async throws -> Bool
    /// Bytes of ping bodies stored.
    func telemetryBytes() async throws -> Int
    /// Stored pings matching the filter, in arrival order.
    func pings(clientID: String?, ping: String?, since: Double?) async throws -> [TelemetryRecord]
    /// `(client_id, ping, ping_info.seq)` of every stored ping whose sequence number lies in `range`, sorted.
    func pingSequences(clientID: String?, range: ClosedRange<Int>) async throws -> [(String, String, Int)]
    /// Sets (inserting or replacing) a feature configuration.
    func setFeature(appID: String, featureID: String, config: String, at: Double) async throws
    /// Deletes a feature configuration; false when there was none.
    func deleteFeature(appID: String, featureID: String) async throws -> Bool
    /// An application's feature configurations, by feature id.
    func features(appID: String) async throws -> [(String, String)]
}

/// What the scheduler reads and writes (planning occurrences, walking due moments, recording what pushes did), and the
/// coordination it runs under: ``withStudyLock(_:wait:_:)`` for study-wide work and
/// ``withParticipantLock(studyID:patientID:_:)`` for one participant; on PostgreSQL both hold across every instance.
protocol SchedulingStore: CatalogStore {
    /// Ids of the studies the real-time ticker runs (server-scheduled, real clock).
    func realTimeStudies() async throws -> [String]
    /// Registered participants of a study.
    func registeredParticipants(studyID: String) async throws -> [ParticipantRecord]
    /// Registered, active participants whose occurrences end before `horizon` (or were never planned).
    func participantsToExtend(studyID: String, horizon: Double) async throws -> [ParticipantRecord]
    /// Every intervention date of a study's participants: patient id → name → date.
    func studyInterventionDates(studyID: String) async throws -> [String: [String: String]]
    /// Pending occurrence uuids of one survey for the given participants: patient id → uuids.
    func pendingOccurrences(surveyID: String, patientIDs: [String]) async throws -> [String: [String]]
    /// Applies planned occurrence changes in one transaction.
    func applyPlan(_ plan: PlanChanges) async throws
    /// The distinct due times of pending occurrences in `(after, through]`, ascending.
    func dueMoments(studyID: String, after: Double, through: Double) async throws -> [Double]
    /// The earliest moment in `(after, through]` at which a participant's back-off ends while it has pending
    /// occurrences due by then and a live token: a retry a clock move must walk, as it walks due moments.
    func nextRetryMoment(studyID: String, after: Double, through: Double) async throws -> Double?
    /// Pending occurrences due by `at`, grouped by active participant (sorted by patient id); with `patientID`, only
    /// that participant's (a token change catches up one participant, not the study).
    func dueWork(studyID: String, at: Double, patientID: String?) async throws -> [DueWork]
    /// Records what one due moment's pushes did, in one transaction.
    func recordFiring(_ outcomes: [FiringOutcome], at: Double) async throws
    /// The earliest resend moment (`occurrence.resend_at`, ``ResendRule``) in `(after, through]` of the study's sent
    /// occurrences whose receipt their participant has not reported: a resend a clock move must walk.
    func nextResendMoment(studyID: String, after: Double, through: Double) async throws -> Double?
    /// Sent, unconfirmed occurrences whose resend moment is due by `at`, grouped by active participant; with
    /// `patientID`, only that participant's.
    func dueResends(studyID: String, at: Double, patientID: String?) async throws -> [DueWork]
    /// Runs `body` holding the study's scheduling lock exclusively (across instances where the store is shared). Work
    /// in one process queues; with `wait: false`, returns nil when another instance keeps the lock for longer than a
    /// moment (the real-time ticker skips a study another instance is walking, yet is not starved by registrations).
    func withStudyLock<T: Sendable>(_ studyID: String, wait: Bool, _ body: @Sendable () async throws -> T) async throws -> T?
    /// Runs `body` holding the study's scheduling lock shared and the participant's exclusively (across instances
    /// where the store is shared): participants of one study are planned side by side, each by one request at a time,
    /// and never while a study-wide walk (``withStudyLock(_:wait:_:)``) runs.
    func withParticipantLock<T: Sendable>(studyID: String, patientID: String, _ body: @Sendable () async throws -> T) async throws -> T
}

/// What the server stores, whatever holds it, as the one value every consumer gets a part of (each route family, the
/// scheduler and the telemetry routes see only the protocols above they use): SQLite (``SQLiteStore``, the embedded default) or PostgreSQL
/// (``PostgresStore``, shared by several instances). Both keep the same rules:
/// - every method that changes data returns only after the change is durable (a 200 means it is on disk);
/// - every method is all-or-nothing;
/// - scheduling work for one study runs under ``withStudyLock(_:wait:_:)`` and planning one participant under
///   ``withParticipantLock(studyID:patientID:_:)``; on PostgreSQL both hold across every instance on the database.
protocol Store: MobileStore, StudyAdminStore, HistoryStore, TelemetryStore, SchedulingStore {
    /// Where the data is.
    var location: StoreLocation { get }
    /// Writes committed and transactions used since start (the group-commit ratio; equal where there is no batching).
    var writeCounts: (writes: Int, commits: Int) { get }
    /// Closes connections (PostgreSQL); SQLite has nothing to close.
    func close() async
}

/// The optional fields every mobile request may carry.
struct DeviceReport: Sendable {
    var versionCode: String?
    var versionName: String?
    var osVersion: String?
    var deviceStatusReport: String?
    var timezone: String?
    var deviceID: String?
    /// Notification uuids the device confirms.
    var notificationUUIDs: [String] = []
    /// When (study time) the request arrived.
    var at: Double

    var hasFields: Bool {
        [versionCode, versionName, osVersion, deviceStatusReport, timezone, deviceID].contains { $0 != nil }
    }
}

/// What `/register_user` writes.
struct Registration: Sendable {
    var patientID: String
    /// The zone kept at the first registration.
    var timezone: String
    var timezoneIsFallback: Bool
    var at: Double
    var passwordRecord: String
    var deviceID: String
    var os: String
    var deviceInfo: String
    var pushToken: String?
}

/// An upload row.
struct UploadRecord: Sendable {
    var patientID: String
    var fileName: String
    var stream: String
    var receivedAt: Double
    var lines: Int
    var badLines: Int
    var content: String
}

/// Occurrence changes computed by ``OccurrencePlanner`` and applied in one transaction.
struct PlanChanges: Sendable {
    /// New rows (an existing uuid is kept as it is).
    var inserts: [OccurrenceRecord] = []
    /// Pending rows no longer wanted.
    var deletes: [String] = []
    /// Participants' new `materialized_through`.
    var materialized: [(patientID: String, through: Double)] = []

    var isEmpty: Bool { inserts.isEmpty && deletes.isEmpty && materialized.isEmpty }
}

/// One participant's pending occurrences at a due moment.
struct DueWork: Sendable {
    var participant: ParticipantRecord
    /// Pending occurrences due.
    var occurrences: [OccurrenceRecord]
    /// Sent occurrences whose resend is due (``ResendRule``): they ride on the same push.
    var resends: [OccurrenceRecord] = []
}

/// What one participant's turn at a due moment produced.
struct FiringOutcome: Sendable {
    enum ParticipantUpdate: Sendable {
        case none
        case delivered
        case unregistered(token: String)
        case backOff(until: Double, count: Int)
    }
    var records: [PushRecord] = []
    var sent: [(occurrence: String, push: String)] = []
    var expired: [(occurrence: String, push: String)] = []
    /// Each sent occurrence's next resend moment (``ResendRule``; nil: none).
    var resendAt: [(occurrence: String, at: Double?)] = []
    var update: ParticipantUpdate = .none
}

/// Store errors with the API's codes, the same from both stores.
enum StoreError {
    static let tokenInUse = APIError(.badRequest, code: "push_token_in_use", "this push token is registered to another participant",
                                     field: "fcm_token")

    static func participantExists(_ id: String) -> APIError {
        APIError(.conflict, code: "participant_exists", "participant '\(id)' already exists", field: "patient_id")
    }
}

/// Opens the store a ``StoreLocation`` names.
enum StoreOpener {
    static func open(_ location: StoreLocation, metrics: ServerMetrics?, logger: Logger) async throws -> any Store {
        switch location {
        case .file, .memory: try SQLiteStore(location, metrics: metrics)
        case .postgres(let url): try await PostgresStore.open(url, metrics: metrics, logger: logger)
        }
    }
}
