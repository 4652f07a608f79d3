import Scheduling

/// Wire types of the mock server's admin API (PROTOCOL.md §2).
public enum AdminWire {
    /// `{"frozen_at": time}` in a study request.
    public struct ClockSetting: Codable, Sendable, Equatable {
        public var frozenAt: String
        enum CodingKeys: String, CodingKey { case frozenAt = "frozen_at" }
        public init(frozenAt: String) { self.frozenAt = frozenAt }
    }

    /// `POST /__admin/studies` body.
    public struct CreateStudy: Codable, Sendable, Equatable {
        public var name: String
        public var timezone: String?
        /// `server` or `device`.
        public var scheduling: String
        public var deviceSettings: [String: JSONValue]?
        public var clock: ClockSetting?
        public var maxDelayMinutes: Int?
        public var perParticipantKeys: Bool?
        /// Names of the study's interventions (anchors of relative schedules).
        public var interventions: [String]?
        enum CodingKeys: String, CodingKey {
            case name, timezone, scheduling, deviceSettings = "device_settings", clock
            case maxDelayMinutes = "max_delay_minutes", perParticipantKeys = "per_participant_keys", interventions
        }
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
        public var studyID: String
        public var name: String
        public var timezone: String
        public var scheduling: String
        public var maxDelayMinutes: Int
        public var perParticipantKeys: Bool
        public var deviceSettings: [String: JSONValue]
        public var clock: Clock
        public var interventions: [String]
        public var createdAt: String
        enum CodingKeys: String, CodingKey {
            case studyID = "study_id", name, timezone, scheduling, maxDelayMinutes = "max_delay_minutes"
            case perParticipantKeys = "per_participant_keys", deviceSettings = "device_settings", clock, interventions
            case createdAt = "created_at"
        }
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
        public var participants: Int
        public var registered: Int
        public var occurrencesPending: Int
        public var pushesSent: Int
        public var submissions: Int
        enum CodingKeys: String, CodingKey {
            case participants, registered, occurrencesPending = "occurrences_pending", pushesSent = "pushes_sent", submissions
        }
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
        public var patientID: String?
        public var password: String?
        public var count: Int?
        enum CodingKeys: String, CodingKey { case patientID = "patient_id", password, count }
        public init(patientID: String? = nil, password: String? = nil, count: Int? = nil) {
            self.patientID = patientID
            self.password = password
            self.count = count
        }
    }

    /// A created participant and its temporary plaintext password.
    public struct Credentials: Codable, Sendable, Equatable {
        public var patientID: String
        public var password: String
        enum CodingKeys: String, CodingKey { case patientID = "patient_id", password }
        public init(patientID: String, password: String) {
            self.patientID = patientID
            self.password = password
        }
    }

    /// `{"participants": [...]}`.
    public struct CreatedParticipants: Codable, Sendable, Equatable {
        public var participants: [Credentials]
        public init(participants: [Credentials]) { self.participants = participants }
    }

    /// `GET /__admin/participants/{patient_id}`.
    public struct Participant: Codable, Sendable, Equatable {
        public var patientID: String
        public var studyID: String
        public var registeredAt: String?
        public var timezone: String?
        public var timezoneFallback: Bool
        public var pushToken: String?
        public var pushTokenUnregistered: Bool
        public var deviceID: String?
        public var os: String?
        /// The latest registration (`registered_at` is the first), with milliseconds.
        public var lastRegisteredAt: String?
        enum CodingKeys: String, CodingKey {
            case patientID = "patient_id", studyID = "study_id", registeredAt = "registered_at", timezone
            case timezoneFallback = "timezone_fallback", pushToken = "push_token"
            case pushTokenUnregistered = "push_token_unregistered", deviceID = "device_id", os, lastRegisteredAt = "last_registered_at"
        }
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
        public var name: String
        public var date: String
        public init(name: String, date: String) {
            self.name = name
            self.date = date
        }
    }

    /// `POST /__admin/studies/{id}/surveys` and `PUT /__admin/surveys/{id}` body.
    public struct CreateSurvey: Codable, Sendable, Equatable {
        public var name: String
        public var surveyType: String
        public var content: [JSONValue]
        public var settings: JSONValue?
        public var schedules: [Schedule]
        enum CodingKeys: String, CodingKey { case name, surveyType = "survey_type", content, settings, schedules }
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
        public var surveyID: String
        enum CodingKeys: String, CodingKey { case surveyID = "survey_id" }
        public init(surveyID: String) { self.surveyID = surveyID }
    }

    /// One scheduled occurrence.
    public struct Occurrence: Codable, Sendable, Equatable {
        public var uuid: String
        public var surveyID: String
        public var patientID: String
        public var dueAt: String
        /// Local wall-clock time in the participant's zone, `YYYY-MM-DDTHH:MM`.
        public var localTime: String
        /// `pending`, `sent`, `expired`.
        public var status: String
        enum CodingKeys: String, CodingKey {
            case uuid, surveyID = "survey_id", patientID = "patient_id", dueAt = "due_at", localTime = "local_time", status
        }
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
        public var uuid: String
        public var patientID: String
        public var surveyIDs: [String]
        public var scheduleUUIDs: [String]
        public var dueAt: String
        public var sentAt: String?
        /// `sent`, `relay_error`, `token_unregistered`, `no_token`, `expired`.
        public var status: String
        /// HTTP status the relay answered, if it answered.
        public var relayStatus: Int?
        public var relayReason: String?
        public var nonce: String?
        /// The push's schedule uuids the device reported receiving (`notification_uuids`); Beiwe's `confirmed_received`.
        public var confirmedUUIDs: [String]?
        /// The relay's id of the message (APNs `apns-id`, the last part of FCM's `name`): the key of its
        /// `GET /__control/trace` entries.
        public var relayMessageID: String?
        enum CodingKeys: String, CodingKey {
            case uuid, patientID = "patient_id", surveyIDs = "survey_ids", scheduleUUIDs = "schedule_uuids"
            case dueAt = "due_at", sentAt = "sent_at", status, relayStatus = "relay_status"
            case relayReason = "relay_reason", nonce, confirmedUUIDs = "confirmed_uuids", relayMessageID = "relay_message_id"
        }
        public init(uuid: String, patientID: String, surveyIDs: [String], scheduleUUIDs: [String], dueAt: String,
                    sentAt: String?, status: String, relayStatus: Int?, relayReason: String?, nonce: String?,
                    relayMessageID: String? = nil) {
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
        public var surveyID: String
        public var patientID: String
        public var fileName: String
        public var receivedAt: String
        public var answers: [SurveyAnswer]
        enum CodingKeys: String, CodingKey {
            case surveyID = "survey_id", patientID = "patient_id", fileName = "file_name", receivedAt = "received_at", answers
        }
        public init(surveyID: String, patientID: String, fileName: String, receivedAt: String, answers: [SurveyAnswer]) {
            self.surveyID = surveyID
            self.patientID = patientID
            self.fileName = fileName
            self.receivedAt = receivedAt
            self.answers = answers
        }
    }

    /// A stored telemetry ping.
    /// `GET /features/<app_id>?client_id=`: each feature's value for the client, and the experiments it is in.
    public struct Features: Codable, Sendable, Equatable {
        public var features: [String: JSONValue]
        public var enrollments: [Enrollment]
        public init(features: [String: JSONValue], enrollments: [Enrollment]) {
            self.features = features
            self.enrollments = enrollments
        }
    }

    public struct Enrollment: Codable, Sendable, Equatable {
        public var slug: String
        public var branch: String
        public var featureID: String
        enum CodingKeys: String, CodingKey { case slug, branch, featureID = "feature_id" }
        public init(slug: String, branch: String, featureID: String) {
            self.slug = slug
            self.branch = branch
            self.featureID = featureID
        }
    }

    /// `GET /__admin/telemetry/gaps`: one client's stored sequence numbers of one ping name.
    public struct SeqGaps: Codable, Sendable, Equatable {
        public var clientID: String
        public var ping: String
        /// Distinct `seq` values stored.
        public var stored: Int
        public var highest: Int
        /// Numbers from 0 to `highest` never stored, the lowest first; at most ``missingListLimit`` of them.
        public var missing: [Int]
        /// How many numbers from 0 to `highest` were never stored (all of them, listed or not).
        public var missingCount: Int?
        enum CodingKeys: String, CodingKey { case clientID = "client_id", ping, stored, highest, missing, missingCount = "missing_count" }

        /// The most numbers `missing` lists.
        public static let missingListLimit = 1_000

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

    public struct StoredPing: Codable, Sendable, Equatable {
        public var documentID: String
        public var appID: String
        public var ping: String
        public var schemaVersion: String
        public var clientID: String
        public var receivedAt: String
        public var body: JSONValue
        enum CodingKeys: String, CodingKey {
            case documentID = "document_id", appID = "app_id", ping, schemaVersion = "schema_version"
            case clientID = "client_id", receivedAt = "received_at", body
        }
        public init(documentID: String, appID: String, ping: String, schemaVersion: String, clientID: String,
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
        public var now: String
        /// `real` or `frozen`.
        public var mode: String
        public init(now: String, mode: String) {
            self.now = now
            self.mode = mode
        }
    }

    /// `POST /__admin/studies/{id}/clock` body: exactly one of the three.
    public struct ClockRequest: Codable, Sendable, Equatable {
        public var freezeAt: String?
        public var advanceSeconds: Int?
        public var real: Bool?
        enum CodingKeys: String, CodingKey { case freezeAt = "freeze_at", advanceSeconds = "advance_seconds", real }
        public init(freezeAt: String? = nil, advanceSeconds: Int? = nil, real: Bool? = nil) {
            self.freezeAt = freezeAt
            self.advanceSeconds = advanceSeconds
            self.real = real
        }
    }

    /// `{"now", "mode", "fired"}`.
    public struct ClockResult: Codable, Sendable, Equatable {
        public var now: String
        public var mode: String
        public var fired: [PushLogEntry]
        public init(now: String, mode: String, fired: [PushLogEntry]) {
            self.now = now
            self.mode = mode
            self.fired = fired
        }
    }

    /// `GET /__admin/info`.
    public struct Info: Codable, Sendable, Equatable {
        public var service: String
        public var version: String
        public var pid: Int
        public var url: String
        public var store: String
        public var kdfIterations: Int
        /// The first relay URL (`--relay-url`).
        public var relayURL: String?
        /// Every relay URL, in the order given (absent from servers older than this field).
        public var relayURLs: [String]?
        enum CodingKeys: String, CodingKey {
            case service, version, pid, url, store, kdfIterations = "kdf_iterations", relayURL = "relay_url", relayURLs = "relay_urls"
        }
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
        public typealias Range = MillisecondRange

        public var route: String
        public var status: Int?
        public var delayMs: Range?
        public var probability: Double
        public var seed: UInt64?

        enum CodingKeys: String, CodingKey { case route, status, delayMs = "delay_ms", probability, seed }
        public static let allowedKeys: Set<String> = ["route", "status", "delay_ms", "probability", "seed"]

        public init(route: String, status: Int? = nil, delayMs: Range? = nil, probability: Double, seed: UInt64? = nil) {
            self.route = route
            self.status = status
            self.delayMs = delayMs
            self.probability = probability
            self.seed = seed
        }
    }
}
