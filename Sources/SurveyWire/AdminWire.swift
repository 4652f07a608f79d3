import Scheduling

/// Wire types of the mock server's admin API (PROTOCOL.md §2).
public enum AdminWire {
    /// `{"frozen_at": time}` in a study request.
    public struct ClockSetting: Codable, Sendable, Equatable {
        /// The instant the study's clock starts frozen at (RFC 3339).
        public var frozenAt: String
        enum CodingKeys: String, CodingKey { case frozenAt = "frozen_at" }
        /// Creates the value from its fields.
        public init(frozenAt: String) { self.frozenAt = frozenAt }
    }

    /// `POST /__admin/studies` body.
    public struct CreateStudy: Codable, Sendable, Equatable {
        /// The study's display name.
        public var name: String
        /// The study's tz database zone (default `America/New_York`).
        public var timezone: String?
        /// `server` or `device`.
        public var scheduling: String
        /// Beiwe device settings sent to devices at registration (defaults fill what is absent).
        public var deviceSettings: [String: JSONValue]?
        /// Start with the study's clock frozen at this instant (absent: real time).
        public var clock: ClockSetting?
        /// How late a due push may still be sent, in minutes (default 1440, Beiwe's).
        public var maxDelayMinutes: Int?
        /// Whether each participant gets its own RSA key (default: one key per study).
        public var perParticipantKeys: Bool?
        /// Names of the study's interventions (anchors of relative schedules).
        public var interventions: [String]?
        enum CodingKeys: String, CodingKey {
            case name, timezone, scheduling, deviceSettings = "device_settings", clock
            case maxDelayMinutes = "max_delay_minutes", perParticipantKeys = "per_participant_keys", interventions
        }
        /// Creates the value from its fields.
        public init(name: String, timezone: String? = nil, scheduling: String, deviceSettings: [String: JSONValue]? = nil,
                    clock: ClockSetting? = nil, maxDelayMinutes: Int? = nil, perParticipantKeys: Bool? = nil,
                    interventions: [String]? = nil) {
            self.interventions = interventions
            self.name = name
            self.timezone = timezone
            self.scheduling = scheduling
            self.deviceSettings = deviceSettings
            self.clock = clock
            self.maxDelayMinutes = maxDelayMinutes
            self.perParticipantKeys = perParticipantKeys
        }
    }

    /// A study as the admin API shows it.
    public struct Study: Codable, Sendable, Equatable {
        /// The study's id (24 hex characters).
        public var studyID: String
        /// The study's display name.
        public var name: String
        /// The study's tz database zone.
        public var timezone: String
        /// `server` (the server plans occurrences and pushes them) or `device` (the phone schedules).
        public var scheduling: String
        /// How late a due push may still be sent, in minutes.
        public var maxDelayMinutes: Int
        /// Whether each participant has its own RSA key.
        public var perParticipantKeys: Bool
        /// The Beiwe device settings devices receive at registration.
        public var deviceSettings: [String: JSONValue]
        /// The study's clock now.
        public var clock: Clock
        /// Names of the study's interventions.
        public var interventions: [String]
        /// When the study was created (RFC 3339, real time).
        public var createdAt: String
        enum CodingKeys: String, CodingKey {
            case studyID = "study_id", name, timezone, scheduling, maxDelayMinutes = "max_delay_minutes"
            case perParticipantKeys = "per_participant_keys", deviceSettings = "device_settings", clock, interventions
            case createdAt = "created_at"
        }
        /// Creates the value from its fields.
        public init(studyID: String, name: String, timezone: String, scheduling: String, maxDelayMinutes: Int,
                    perParticipantKeys: Bool, deviceSettings: [String: JSONValue], clock: Clock, interventions: [String] = [],
                    createdAt: String) {
            self.interventions = interventions
            self.studyID = studyID
            self.name = name
            self.timezone = timezone
            self.scheduling = scheduling
            self.maxDelayMinutes = maxDelayMinutes
            self.perParticipantKeys = perParticipantKeys
            self.deviceSettings = deviceSettings
            self.clock = clock
            self.createdAt = createdAt
        }
    }

    /// `GET /__admin/studies/{id}/stats`.
    public struct StudyStats: Codable, Sendable, Equatable {
        /// Participants created in the study.
        public var participants: Int
        /// Participants that have registered a device.
        public var registered: Int
        /// Occurrences planned and not yet sent or expired.
        public var occurrencesPending: Int
        /// Pushes the relay accepted.
        public var pushesSent: Int
        /// Survey answer uploads received.
        public var submissions: Int
        enum CodingKeys: String, CodingKey {
            case participants, registered, occurrencesPending = "occurrences_pending", pushesSent = "pushes_sent", submissions
        }
        /// Creates the value from its fields.
        public init(participants: Int, registered: Int, occurrencesPending: Int, pushesSent: Int, submissions: Int) {
            self.participants = participants
            self.registered = registered
            self.occurrencesPending = occurrencesPending
            self.pushesSent = pushesSent
            self.submissions = submissions
        }
    }

    /// `POST /__admin/studies/{id}/participants` body.
    public struct CreateParticipants: Codable, Sendable, Equatable {
        /// The id to create (absent: a random 8-character id).
        public var patientID: String?
        /// The temporary password (absent: a random one).
        public var password: String?
        /// How many participants to create with random ids and passwords (instead of `patient_id`).
        public var count: Int?
        enum CodingKeys: String, CodingKey { case patientID = "patient_id", password, count }
        /// Creates the value from its fields.
        public init(patientID: String? = nil, password: String? = nil, count: Int? = nil) {
            self.patientID = patientID
            self.password = password
            self.count = count
        }
    }

    /// A created participant and its temporary plaintext password.
    public struct Credentials: Codable, Sendable, Equatable {
        /// The participant's id.
        public var patientID: String
        /// The temporary plaintext password the device registers with.
        public var password: String
        enum CodingKeys: String, CodingKey { case patientID = "patient_id", password }
        /// Creates the value from its fields.
        public init(patientID: String, password: String) {
            self.patientID = patientID
            self.password = password
        }
    }

    /// `{"participants": [...]}`.
    public struct CreatedParticipants: Codable, Sendable, Equatable {
        /// The created participants, in creation order.
        public var participants: [Credentials]
        /// Creates the value from its fields.
        public init(participants: [Credentials]) { self.participants = participants }
    }

    /// `GET /__admin/participants/{patient_id}`.
    public struct Participant: Codable, Sendable, Equatable {
        /// The participant's id.
        public var patientID: String
        /// The study it belongs to.
        public var studyID: String
        /// The first registration (RFC 3339), or nil before any.
        public var registeredAt: String?
        /// The zone fixed at the first registration.
        public var timezone: String?
        /// True when the device sent no usable zone and the fallback (`America/New_York`) was kept.
        public var timezoneFallback: Bool
        /// The device's push token, if it has one.
        public var pushToken: String?
        /// True after the relay answered that the token is gone (410, or FCM `UNREGISTERED`).
        public var pushTokenUnregistered: Bool
        /// The device id the phone last reported.
        public var deviceID: String?
        /// `ios` or `android`, from the registration.
        public var os: String?
        /// The latest registration (`registered_at` is the first), with milliseconds.
        public var lastRegisteredAt: String?
        enum CodingKeys: String, CodingKey {
            case patientID = "patient_id", studyID = "study_id", registeredAt = "registered_at", timezone
            case timezoneFallback = "timezone_fallback", pushToken = "push_token"
            case pushTokenUnregistered = "push_token_unregistered", deviceID = "device_id", os, lastRegisteredAt = "last_registered_at"
        }
        /// Creates the value from its fields.
        public init(patientID: String, studyID: String, registeredAt: String?, timezone: String?, timezoneFallback: Bool,
                    pushToken: String?, pushTokenUnregistered: Bool, deviceID: String?, os: String?, lastRegisteredAt: String? = nil) {
            self.lastRegisteredAt = lastRegisteredAt
            self.patientID = patientID
            self.studyID = studyID
            self.registeredAt = registeredAt
            self.timezone = timezone
            self.timezoneFallback = timezoneFallback
            self.pushToken = pushToken
            self.pushTokenUnregistered = pushTokenUnregistered
            self.deviceID = deviceID
            self.os = os
        }
    }

    /// `POST /__admin/participants/{id}/interventions` body.
    public struct Intervention: Codable, Sendable, Equatable {
        /// The intervention's name, as the study lists it.
        public var name: String
        /// The intervention date, `YYYY-MM-DD` in the participant's zone.
        public var date: String
        /// Creates the value from its fields.
        public init(name: String, date: String) {
            self.name = name
            self.date = date
        }
    }

    /// `POST /__admin/studies/{id}/surveys` and `PUT /__admin/surveys/{id}` body.
    public struct CreateSurvey: Codable, Sendable, Equatable {
        /// The survey's display name.
        public var name: String
        /// Beiwe's survey type (`tracking_survey` or `audio_survey`).
        public var surveyType: String
        /// The questions, in Beiwe's survey JSON.
        public var content: [JSONValue]
        /// Beiwe's survey settings object, passed to devices as given.
        public var settings: JSONValue?
        /// When the survey falls due (weekly, absolute or relative schedules).
        public var schedules: [Schedule]
        enum CodingKeys: String, CodingKey { case name, surveyType = "survey_type", content, settings, schedules }
        /// Creates the value from its fields.
        public init(name: String, surveyType: String = "tracking_survey", content: [JSONValue], settings: JSONValue? = nil,
                    schedules: [Schedule]) {
            self.name = name
            self.surveyType = surveyType
            self.content = content
            self.settings = settings
            self.schedules = schedules
        }
    }

    /// `{"survey_id"}`.
    public struct SurveyCreated: Codable, Sendable, Equatable {
        /// The new survey's id.
        public var surveyID: String
        enum CodingKeys: String, CodingKey { case surveyID = "survey_id" }
        /// Creates the value from its fields.
        public init(surveyID: String) { self.surveyID = surveyID }
    }

    /// One scheduled occurrence.
    public struct Occurrence: Codable, Sendable, Equatable {
        /// The occurrence's id (the `schedule_uuid` a push carries).
        public var uuid: String
        /// The survey that falls due.
        public var surveyID: String
        /// The participant it falls due for.
        public var patientID: String
        /// When it falls due (RFC 3339, UTC).
        public var dueAt: String
        /// Local wall-clock time in the participant's zone, `YYYY-MM-DDTHH:MM`.
        public var localTime: String
        /// `pending`, `sent`, `expired`.
        public var status: String
        enum CodingKeys: String, CodingKey {
            case uuid, surveyID = "survey_id", patientID = "patient_id", dueAt = "due_at", localTime = "local_time", status
        }
        /// Creates the value from its fields.
        public init(uuid: String, surveyID: String, patientID: String, dueAt: String, localTime: String, status: String) {
            self.uuid = uuid
            self.surveyID = surveyID
            self.patientID = patientID
            self.dueAt = dueAt
            self.localTime = localTime
            self.status = status
        }
    }

    /// One push attempt in the send log.
    public struct PushLogEntry: Codable, Sendable, Equatable {
        /// The push's id.
        public var uuid: String
        /// The participant the push went to.
        public var patientID: String
        /// The surveys the push announced.
        public var surveyIDs: [String]
        /// The occurrences it carried (one per survey).
        public var scheduleUUIDs: [String]
        /// When its earliest occurrence fell due (RFC 3339).
        public var dueAt: String
        /// When the server handed it to the relay, or nil when it was not sent.
        public var sentAt: String?
        /// `sent`, `relay_error`, `token_unregistered`, `no_token`, `expired`.
        public var status: String
        /// HTTP status the relay answered, if it answered.
        public var relayStatus: Int?
        /// The relay's refusal reason (APNs `reason` or FCM `errorCode`), if any.
        public var relayReason: String?
        /// The push's random nonce (Beiwe's `nonce` data field).
        public var nonce: String?
        /// The push's schedule uuids the device reported receiving (`notification_uuids`); Beiwe's `confirmed_received`.
        public var confirmedUUIDs: [String]?
        /// The relay's id of the message (APNs `apns-id`, the last part of FCM's `name`): the key of its
        /// `GET /__control/trace` entries.
        public var relayMessageID: String?
        /// Whether this push re-sent occurrences whose receipt was not confirmed (Beiwe's resend; PROTOCOL.md §9).
        public var resend: Bool?
        enum CodingKeys: String, CodingKey {
            case uuid, patientID = "patient_id", surveyIDs = "survey_ids", scheduleUUIDs = "schedule_uuids"
            case dueAt = "due_at", sentAt = "sent_at", status, relayStatus = "relay_status"
            case relayReason = "relay_reason", nonce, confirmedUUIDs = "confirmed_uuids", relayMessageID = "relay_message_id", resend
        }
        /// Creates the value from its fields.
        public init(uuid: String, patientID: String, surveyIDs: [String], scheduleUUIDs: [String], dueAt: String,
                    sentAt: String?, status: String, relayStatus: Int?, relayReason: String?, nonce: String?,
                    relayMessageID: String? = nil, resend: Bool = false) {
            self.resend = resend
            self.relayMessageID = relayMessageID
            self.uuid = uuid
            self.patientID = patientID
            self.surveyIDs = surveyIDs
            self.scheduleUUIDs = scheduleUUIDs
            self.dueAt = dueAt
            self.sentAt = sentAt
            self.status = status
            self.relayStatus = relayStatus
            self.relayReason = relayReason
            self.nonce = nonce
        }
    }

    /// Decrypted answers of one upload.
    public struct Submission: Codable, Sendable, Equatable {
        /// The answered survey.
        public var surveyID: String
        /// The participant who answered.
        public var patientID: String
        /// The upload's file name, as the device sent it.
        public var fileName: String
        /// When the server received it (RFC 3339).
        public var receivedAt: String
        /// The decrypted answers, in the file's order.
        public var answers: [SurveyAnswer]
        enum CodingKeys: String, CodingKey {
            case surveyID = "survey_id", patientID = "patient_id", fileName = "file_name", receivedAt = "received_at", answers
        }
        /// Creates the value from its fields.
        public init(surveyID: String, patientID: String, fileName: String, receivedAt: String, answers: [SurveyAnswer]) {
            self.surveyID = surveyID
            self.patientID = patientID
            self.fileName = fileName
            self.receivedAt = receivedAt
            self.answers = answers
        }
    }

    /// `GET /features/<app_id>?client_id=`: each feature's value for the client, and the experiments it is in.
    public struct Features: Codable, Sendable, Equatable {
        /// Each feature's value for the client: its rollout merged with the client's experiment branch.
        public var features: [String: JSONValue]
        /// The experiments the client is enrolled in.
        public var enrollments: [Enrollment]
        /// Creates the value from its fields.
        public init(features: [String: JSONValue], enrollments: [Enrollment]) {
            self.features = features
            self.enrollments = enrollments
        }
    }

    /// One experiment a client is enrolled in.
    public struct Enrollment: Codable, Sendable, Equatable {
        /// The experiment's slug.
        public var slug: String
        /// The branch the client was bucketed into.
        public var branch: String
        /// The feature the experiment configures.
        public var featureID: String
        enum CodingKeys: String, CodingKey { case slug, branch, featureID = "feature_id" }
        /// Creates the value from its fields.
        public init(slug: String, branch: String, featureID: String) {
            self.slug = slug
            self.branch = branch
            self.featureID = featureID
        }
    }

    /// `GET /__admin/telemetry/gaps`: one client's stored sequence numbers of one ping name.
    public struct SeqGaps: Codable, Sendable, Equatable {
        /// The client's id.
        public var clientID: String
        /// The ping's name.
        public var ping: String
        /// Distinct `seq` values stored.
        public var stored: Int
        /// The highest `seq` stored (0 when none).
        public var highest: Int
        /// Numbers from 0 to `highest` never stored, the lowest first; at most ``missingListLimit`` of them.
        public var missing: [Int]
        /// How many numbers from 0 to `highest` were never stored (all of them, listed or not).
        public var missingCount: Int?
        enum CodingKeys: String, CodingKey { case clientID = "client_id", ping, stored, highest, missing, missingCount = "missing_count" }

        /// The most numbers `missing` lists.
        public static let missingListLimit = 1_000

        /// Creates the value from its fields.
        public init(clientID: String, ping: String, stored: Int, highest: Int, missing: [Int], missingCount: Int? = nil) {
            self.clientID = clientID
            self.ping = ping
            self.stored = stored
            self.highest = highest
            self.missing = missing
            self.missingCount = missingCount ?? missing.count
        }

        /// The report of one client's ping from its stored sequence numbers, ascending (duplicates allowed, all >= 0):
        /// linear in their count, however large the highest is.
        public init(clientID: String, ping: String, sortedSeqs: [Int]) {
            var distinct: [Int] = []
            distinct.reserveCapacity(sortedSeqs.count)
            for seq in sortedSeqs where seq >= 0 && distinct.last != seq { distinct.append(seq) }
            let highest = distinct.last ?? 0
            var missing: [Int] = []
            var expected = 0
            for seq in distinct {
                while expected < seq && missing.count < Self.missingListLimit {
                    missing.append(expected)
                    expected += 1
                }
                if missing.count >= Self.missingListLimit { break }
                expected = seq + 1
            }
            let missingCount = distinct.isEmpty ? 0 : highest + 1 - distinct.count
            self.init(clientID: clientID, ping: ping, stored: distinct.count, highest: highest, missing: missing, missingCount: missingCount)
        }
    }

    /// A stored telemetry ping (`GET /__admin/telemetry`).
    public struct StoredPing: Codable, Sendable, Equatable {
        /// The ping's document id (the submission path's last part; duplicates are dropped).
        public var documentID: String
        /// The application id from the submission path.
        public var appID: String
        /// The ping's name.
        public var ping: String
        /// The schema version from the submission path.
        public var schemaVersion: String
        /// `client_info.client_id` of the ping; absent when the ping carries none.
        public var clientID: String?
        /// When the server stored it (RFC 3339).
        public var receivedAt: String
        /// The ping's JSON as received (decompressed).
        public var body: JSONValue
        enum CodingKeys: String, CodingKey {
            case documentID = "document_id", appID = "app_id", ping, schemaVersion = "schema_version"
            case clientID = "client_id", receivedAt = "received_at", body
        }
        /// Creates the value from its fields.
        public init(documentID: String, appID: String, ping: String, schemaVersion: String, clientID: String?,
                    receivedAt: String, body: JSONValue) {
            self.documentID = documentID
            self.appID = appID
            self.ping = ping
            self.schemaVersion = schemaVersion
            self.clientID = clientID
            self.receivedAt = receivedAt
            self.body = body
        }
    }

    /// `{"now", "mode"}`.
    public struct Clock: Codable, Sendable, Equatable {
        /// The study's time now (RFC 3339).
        public var now: String
        /// `real` or `frozen`.
        public var mode: String
        /// Creates the value from its fields.
        public init(now: String, mode: String) {
            self.now = now
            self.mode = mode
        }
    }

    /// `POST /__admin/studies/{id}/clock` body: exactly one of the three.
    public struct ClockRequest: Codable, Sendable, Equatable {
        /// Freeze the clock at this instant, walking every due moment up to it.
        public var freezeAt: String?
        /// Move the clock this many seconds ahead, walking every due moment in between.
        public var advanceSeconds: Int?
        /// `true`: return the clock to real time.
        public var real: Bool?
        enum CodingKeys: String, CodingKey { case freezeAt = "freeze_at", advanceSeconds = "advance_seconds", real }
        /// Creates the value from its fields.
        public init(freezeAt: String? = nil, advanceSeconds: Int? = nil, real: Bool? = nil) {
            self.freezeAt = freezeAt
            self.advanceSeconds = advanceSeconds
            self.real = real
        }
    }

    /// `{"now", "mode", "fired"}`.
    public struct ClockResult: Codable, Sendable, Equatable {
        /// The study's time after the move.
        public var now: String
        /// `real` or `frozen`.
        public var mode: String
        /// Every push that fell due in the span, as the push log shows them.
        public var fired: [PushLogEntry]
        /// Creates the value from its fields.
        public init(now: String, mode: String, fired: [PushLogEntry]) {
            self.now = now
            self.mode = mode
            self.fired = fired
        }
    }

    /// `GET /__admin/info`.
    public struct Info: Codable, Sendable, Equatable {
        /// `mock-server`.
        public var service: String
        /// The server's version.
        public var version: String
        /// The server's process id.
        public var pid: Int
        /// The URL the server is bound to.
        public var url: String
        /// The store kind: `sqlite`, `sqlite-memory` or `postgres`.
        public var store: String
        /// PBKDF2 iterations used for passwords (`--kdf-iterations`).
        public var kdfIterations: Int
        /// The first relay URL (`--relay-url`).
        public var relayURL: String?
        /// Every relay URL, in the order given (absent from servers older than this field).
        public var relayURLs: [String]?
        enum CodingKeys: String, CodingKey {
            case service, version, pid, url, store, kdfIterations = "kdf_iterations", relayURL = "relay_url", relayURLs = "relay_urls"
        }
        /// Creates the value from its fields.
        public init(service: String, version: String, pid: Int, url: String, store: String, kdfIterations: Int, relayURL: String?,
                    relayURLs: [String]? = nil) {
            self.relayURLs = relayURLs
            self.service = service
            self.version = version
            self.pid = pid
            self.url = url
            self.store = store
            self.kdfIterations = kdfIterations
            self.relayURL = relayURL
        }
    }
}

extension AdminWire {
    /// One `PUT /__admin/faults` rule: requests to `route` (with or without a trailing `/` and the `/ios` variant;
    /// `/prefix/*` for every path under a prefix) are hit with `probability`; a hit waits a random time in `delay_ms`, then answers `status` when one is given.
    public struct FaultRule: Codable, Sendable, Equatable {
        /// `{"min", "max"}` in milliseconds.
        public typealias Range = MillisecondRange

        /// The path the rule matches (`/prefix/*` for everything under a prefix).
        public var route: String
        /// The status a hit answers with (absent: only the delay).
        public var status: Int?
        /// A random wait before a hit is answered, in milliseconds.
        public var delayMs: Range?
        /// The share of matching requests hit, 0 to 1.
        public var probability: Double
        /// Seed of the rule's random choices, for repeatable runs.
        public var seed: UInt64?

        enum CodingKeys: String, CodingKey { case route, status, delayMs = "delay_ms", probability, seed }
        /// The JSON keys a rule may have (anything else is refused).
        public static let allowedKeys: Set<String> = ["route", "status", "delay_ms", "probability", "seed"]

        /// Creates the value from its fields.
        public init(route: String, status: Int? = nil, delayMs: Range? = nil, probability: Double, seed: UInt64? = nil) {
            self.route = route
            self.status = status
            self.delayMs = delayMs
            self.probability = probability
            self.seed = seed
        }
    }
}
