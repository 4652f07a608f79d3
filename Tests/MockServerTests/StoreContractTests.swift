import Foundation
import Logging
import ServerSupport
import SurveyWire
import Testing
import TrioTesting
@testable import MockServer

/// The stores the contract runs on: SQLite always; PostgreSQL when `TRIO_TEST_POSTGRES` names a server (scripts/test
/// starts one), and always on CI, where a missing server then fails instead of being skipped.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    static var available: [StoreKind] {
        TestPostgres.serverURL != nil || ProcessInfo.processInfo.environment["CI"] != nil ? [.sqlite, .postgres] : [.sqlite]
    }

    var testDescription: String { rawValue }

    /// A new, empty store of this kind.
    func open() async throws -> any Store {
        switch self {
        case .sqlite: try SQLiteStore(.memory)
        case .postgres: try await StoreOpener.open(try StoreLocation(argument: await TestPostgres.createDatabase(prefix: "contract")),
                                                   metrics: nil, logger: Logger(label: "store-test"))
        }
    }
}

/// One suite, both implementations of ``Store``: the same calls must give the same answers.
@Suite struct StoreContractTests {
    static func study(_ id: String = Identifiers.objectID(), scheduling: String = "server") -> StudyRecord {
        StudyRecord(id: id, name: "S", timezone: "UTC", scheduling: scheduling, deviceSettings: "{}", maxDelayMinutes: 60,
                    perParticipantKeys: false, clockMode: "frozen", frozenAt: 1_000, privateKey: Data([1, 2, 3]), createdAt: 1)
    }

    static func withStore(_ kind: StoreKind, _ body: (any Store) async throws -> Void) async throws {
        let store = try await kind.open()
        do { try await body(store) } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    static func registration(_ patientID: String, token: String?, at: Double = 1_000) -> Registration {
        Registration(patientID: patientID, timezone: "Europe/Paris", timezoneIsFallback: false, at: at, passwordRecord: "record-2",
                     deviceID: "d1", os: "android", deviceInfo: "{}", pushToken: token)
    }

    @Test(arguments: StoreKind.available) func studiesAndParticipantsRoundTrip(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            let study = Self.study()
            try await store.createStudy(study, interventions: ["b", "a"])
            #expect(try await store.study(study.id)?.privateKey == Data([1, 2, 3]))
            #expect(try await store.studyInterventions(study.id) == ["a", "b"])
            try await store.addStudyIntervention(study.id, name: "a")
            #expect(try await store.studyInterventions(study.id) == ["a", "b"])

            let keyed = ParticipantRecord(patientId: "p1", studyId: study.id, passwordRecord: "r1", privateKey: Data([9, 0, 9]))
            let shared = ParticipantRecord(patientId: "p2", studyId: study.id, passwordRecord: "r2", privateKey: nil)
            try await store.insertParticipants([keyed, shared])
            #expect(try await store.participant("p1")?.privateKey == Data([9, 0, 9]))
            #expect(try await store.participant("p2")?.privateKey == nil)
            // A taken id refuses the whole batch.
            await expectCode("participant_exists") {
                try await store.insertParticipants([ParticipantRecord(patientId: "p3", studyId: study.id, passwordRecord: "r", privateKey: nil),
                                                    ParticipantRecord(patientId: "p1", studyId: study.id, passwordRecord: "r", privateKey: nil)])
            }
            #expect(try await store.participant("p3") == nil)
            #expect(try await store.stats(studyID: study.id).participants == 2)
            let (p, s) = try #require(try await store.participantAndStudy("p1"))
            #expect(p.patientId == "p1" && s.id == study.id)
            #expect(try await store.participantAndStudy("nobody") == nil)
        }
    }

    @Test(arguments: StoreKind.available) func registrationKeepsTheFirstZoneAndOneHolderPerToken(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            let study = Self.study()
            try await store.createStudy(study, interventions: [])
            try await store.insertParticipants(["a", "b"].map { ParticipantRecord(patientId: $0, studyId: study.id, passwordRecord: "r", privateKey: nil) })
            let report = DeviceReport(versionCode: "7", osVersion: "14", notificationUUIDs: ["u1", "u1"], at: 1_000)
            #expect(try await store.register(Self.registration("a", token: "t1"), report: report) == "Europe/Paris")
            var again = Self.registration("a", token: "t2", at: 2_000)
            again.timezone = "Asia/Tokyo"
            #expect(try await store.register(again, report: DeviceReport(at: 2_000)) == "Europe/Paris")
            let a = try #require(try await store.participant("a"))
            #expect(a.registeredAt == 1_000 && a.lastRegisteredAt == 2_000 && a.pushToken == "t2" && a.versionCode == "7")
            await expectCode("push_token_in_use") {
                _ = try await store.register(Self.registration("b", token: "t2"), report: DeviceReport(at: 1))
            }
            #expect(try await store.participant("b")?.registeredAt == nil)
            await expectCode("push_token_in_use") { try await store.setPushToken("t2", patientID: "b") }
            try await store.setPushToken("t3", patientID: "b")
            #expect(try await store.participant("b")?.pushToken == "t3")
            #expect(try await store.register(Self.registration("gone", token: nil), report: DeviceReport(at: 1)) == nil)
            // An absent field keeps its value; receipts are kept once.
            try await store.recordDevice(DeviceReport(versionName: "1.0", notificationUUIDs: ["u1", "u2"], at: 3_000), patientID: "a")
            let updated = try #require(try await store.participant("a"))
            #expect(updated.versionCode == "7" && updated.versionName == "1.0")
            #expect(try await store.notificationReceipts(studyID: study.id) == ["a u1", "a u2"])
        }
    }

    @Test(arguments: StoreKind.available) func plansFiringAndThePushLog(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            let study = Self.study()
            try await store.createStudy(study, interventions: [])
            try await store.insertParticipants(["a", "b"].map { ParticipantRecord(patientId: $0, studyId: study.id, passwordRecord: "r", privateKey: nil) })
            for id in ["a", "b"] { _ = try await store.register(Self.registration(id, token: "tok-\(id)"), report: DeviceReport(at: 1)) }
            func occurrence(_ uuid: String, _ patient: String, _ due: Double) -> OccurrenceRecord {
                OccurrenceRecord(uuid: uuid, studyId: study.id, surveyId: "s1", patientId: patient, scheduleIndex: 0, dueAt: due,
                                 localTime: "t", status: "pending", pushUuid: nil)
            }
            var plan = PlanChanges()
            plan.inserts = [occurrence("o1", "a", 100), occurrence("o2", "b", 100), occurrence("o3", "a", 200), occurrence("o4", "b", 300)]
            plan.materialized = [("a", 400), ("b", 400)]
            try await store.applyPlan(plan)
            try await store.applyPlan(plan)  // the same rows again change nothing
            #expect(try await store.occurrences(studyID: study.id, patientID: nil, all: true).map(\.uuid) == ["o1", "o2", "o3", "o4"])
            #expect(try await store.participant("a")?.materializedThrough == 400)
            #expect(try await store.participantsToExtend(studyID: study.id, horizon: 500).count == 2)
            #expect(try await store.dueMoments(studyID: study.id, after: 0, through: 250) == [100, 200])
            #expect(try await store.pendingOccurrences(surveyID: "s1", patientIDs: ["b"]) == ["b": ["o2", "o4"]])

            let due = try await store.dueWork(studyID: study.id, at: 200, patientID: nil)
            #expect(due.map(\.participant.patientId) == ["a", "b"])
            #expect(due.map { $0.occurrences.map(\.uuid) } == [["o1", "o3"], ["o2"]])
            func push(_ uuid: String, _ patient: String, status: String) -> PushRecord {
                PushRecord(seq: nil, uuid: uuid, studyId: study.id, patientId: patient, surveyIds: "[\"s1\"]", scheduleUuids: "[]", dueAt: 100,
                           sentAt: status == "sent" ? 200 : nil, status: status, relayStatus: status == "sent" ? 200 : 503, relayReason: nil,
                           nonce: "n", relayMessageId: nil)
            }
            var delivered = FiringOutcome()
            delivered.records = [push("push-a", "a", status: "sent")]
            delivered.sent = [("o1", "push-a"), ("o3", "push-a")]
            delivered.update = .delivered
            var failed = FiringOutcome()
            failed.records = [push("push-b", "b", status: "relay_error")]
            failed.update = .backOff(until: 260, count: 1)
            try await store.recordFiring([delivered, failed], at: 200)
            #expect(try await store.occurrences(studyID: study.id, patientID: "a", all: true).map(\.status) == ["sent", "sent"])
            #expect(try await store.occurrences(studyID: study.id, patientID: nil, all: false).map(\.uuid) == ["o2", "o4"])
            #expect(try await store.pushes(studyID: study.id, patientID: nil).map(\.uuid) == ["push-a", "push-b"])
            #expect(try await store.participant("b")?.retryAfter == 260)
            #expect(try await store.participant("b")?.retryCount == 1)
            #expect(try await store.push(uuid: "push-a")?.0.status == "sent")
            #expect(try await store.stats(studyID: study.id).pushesSent == 1)
            var unregistered = FiringOutcome()
            unregistered.records = [push("push-b2", "b", status: "token_unregistered")]
            unregistered.update = .unregistered(token: "tok-b")
            try await store.recordFiring([unregistered], at: 300)
            #expect(try await store.participant("b")?.tokenUnregisteredAt == 300)
            // A plan deletes only pending rows.
            var drop = PlanChanges()
            drop.deletes = ["o1", "o2"]
            try await store.applyPlan(drop)
            #expect(try await store.occurrences(studyID: study.id, patientID: nil, all: true).map(\.uuid) == ["o1", "o3", "o4"])
        }
    }

    @Test(arguments: StoreKind.available) func telemetryFeaturesUploadsAndWipe(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            func ping(_ doc: String, seq: Int) -> TelemetryRecord {
                TelemetryRecord(seq: nil, documentId: doc, appId: "app", ping: "events", schemaVersion: "1", clientId: "c1", receivedAt: 10,
                                body: #"{"ping_info":{"seq":\#(seq)}}"#)
            }
            #expect(try await store.insertPing(ping("d1", seq: 0)))
            #expect(try await !store.insertPing(ping("d1", seq: 0)))
            #expect(try await store.insertPing(ping("d2", seq: 2)))
            #expect(try await store.telemetryBytes() == 2 * ping("d1", seq: 0).body.utf8.count)
            #expect(try await store.pingSequences(clientID: nil, range: 0...100).map(\.2) == [0, 2])
            #expect(try await store.pings(clientID: "c1", ping: nil, since: 5).map(\.documentId) == ["d1", "d2"])
            #expect(try await store.pings(clientID: "other", ping: nil, since: nil).isEmpty)

            try await store.setFeature(appID: "app", featureID: "f", config: "1", at: 1)
            try await store.setFeature(appID: "app", featureID: "f", config: "2", at: 2)
            #expect(try await store.features(appID: "app").map(\.1) == ["2"])
            #expect(try await store.deleteFeature(appID: "app", featureID: "f"))
            #expect(try await !store.deleteFeature(appID: "app", featureID: "f"))

            let study = Self.study()
            try await store.createStudy(study, interventions: [])
            try await store.insertParticipants([ParticipantRecord(patientId: "a", studyId: study.id, passwordRecord: "r", privateKey: nil)])
            // Content with a NUL character is kept on both stores.
            let upload = UploadRecord(patientID: "a", fileName: "a_surveyAnswers_s1_1.csv", stream: "surveyAnswers", receivedAt: 1, lines: 1,
                                      badLines: 0, content: "x\u{0}y")
            let answers = SubmissionRecord(seq: nil, studyId: study.id, patientId: "a", surveyId: "s1", fileName: upload.fileName, receivedAt: 1,
                                           answers: "[]")
            try await store.storeUpload(upload, submission: answers)
            try await store.storeUpload(upload, submission: answers)
            #expect(try await store.submissions(studyID: study.id, patientID: "a").count == 1)

            try await store.wipe()
            #expect(try await store.study(study.id) == nil)
            #expect(try await store.telemetryBytes() == 0)
        }
    }

    @Test(arguments: StoreKind.available) func studyLocksQueueWorkInOneProcessAndTurnAwayATryFromAnother(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            let (entered, enter) = AsyncStream.makeStream(of: Void.self)
            let (release, releasing) = AsyncStream.makeStream(of: Void.self)
            let order = Order()
            let holder = Task {
                try await store.withStudyLock("s1", wait: true) {
                    enter.yield()
                    for await _ in release { break }
                    await order.append("holder")
                    return 1
                }
            }
            for await _ in entered { break }
            // In the same process a try waits its turn.
            let queued = Task { try await store.withStudyLock("s1", wait: false) { await order.append("queued"); return 2 } }
            let otherStudy: Int? = try await store.withStudyLock("s2", wait: false) { 3 }
            if case .postgres(let url) = store.location {
                // Another instance on the same database is turned away while the lock is held.
                let other = try await PostgresStore.open(url, metrics: nil, logger: Logger(label: "store-test"))
                let turnedAway: Int? = try await other.withStudyLock("s1", wait: false) { 4 }
                #expect(turnedAway == nil)
                await other.close()
            }
            releasing.yield()
            let held: Int? = try await holder.value
            let second: Int? = try await queued.value
            #expect(otherStudy == 3 && held == 1 && second == 2)
            #expect(await order.names == ["holder", "queued"])
        }
    }

    // A lock that were not shared would leave the second participant waiting forever: the time limit turns that into a failure.
    @Test(.timeLimit(.minutes(1)), arguments: StoreKind.available) func participantLocksRunSideBySideAndAStudyWalkWaitsForThem(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            let (entered, enter) = AsyncStream.makeStream(of: String.self)
            let gates = ["p1", "p2"].map { _ in AsyncStream.makeStream(of: Void.self) }
            let order = Order()
            // Two participants of one study hold their locks at once (the study's lock shared).
            let holders = zip(["p1", "p2"], gates).map { patient, gate in
                let release = gate.stream
                return Task {
                    try await store.withParticipantLock(studyID: "s1", patientID: patient) {
                        enter.yield(patient)
                        for await _ in release { break }
                        await order.append(patient)
                        return patient
                    }
                }
            }
            var inside: Set<String> = []
            for await patient in entered {
                inside.insert(patient)
                if inside.count == 2 { break }
            }
            #expect(inside == ["p1", "p2"])
            // A study-wide walk queues behind them.
            let walk = Task { try await store.withStudyLock("s1", wait: true) { await order.append("walk"); return 1 } }
            try await Task.sleep(for: .milliseconds(100))
            if case .postgres(let url) = store.location {
                // Another instance's ticker waits a moment for the shared holders, then skips the study.
                let other = try await PostgresStore.open(url, metrics: nil, logger: Logger(label: "store-test"))
                let skipped: Int? = try await other.withStudyLock("s1", wait: false) { 4 }
                #expect(skipped == nil)
                #expect(await order.names.isEmpty)
                // Holders that finish within the moment let it in: registrations do not starve another's ticker.
                let late = Task { try await other.withStudyLock("s1", wait: false) { 5 } }
                try await Task.sleep(for: .milliseconds(200))
                for gate in gates { gate.continuation.yield() }
                let ticked: Int? = try await late.value
                #expect(ticked == 5)
                await other.close()
            } else {
                #expect(await order.names.isEmpty)
                for gate in gates { gate.continuation.yield() }
            }
            for holder in holders { _ = try await holder.value }
            let walked: Int? = try await walk.value
            #expect(walked == 1)
            #expect(await order.names.last == "walk")
            #expect(Set(await order.names.prefix(2)) == ["p1", "p2"])
        }
    }

    /// More study-wide walks at once than the pool has connections, each running queries while it holds its lock: on
    /// PostgreSQL the locks used to sit on the query pool, so 8 walks on 8 studies took all 8 connections and waited for
    /// a ninth for good. The time limit turns a wedge into a failure; a failed ticker lock leaves no `lock_timeout`
    /// behind (a later waiting lock is not cut short).
    @Test(.timeLimit(.minutes(1)), arguments: StoreKind.available) func moreStudyWalksThanConnectionsAllFinish(_ kind: StoreKind) async throws {
        try await Self.withStore(kind) { store in
            let studies = (0..<(2 * PostgresURL.defaultPoolSize)).map { _ in Self.study() }
            for study in studies { try await store.createStudy(study, interventions: []) }
            let (entered, enter) = AsyncStream.makeStream(of: Void.self)
            let release = Gate()
            let walks = studies.map { study in
                Task {
                    try await store.withStudyLock(study.id, wait: true) { () async throws -> String in
                        enter.yield()
                        // Hold every lock at once before any walk queries, as concurrent clock moves do.
                        await release.wait()
                        var found = 0
                        for _ in 0..<5 where try await store.study(study.id) != nil { found += 1 }
                        return found == 5 ? study.id : ""
                    }
                }
            }
            // As many walks enter as this process may hold locks at once; then all are let go together.
            let holders = kind == .postgres ? PostgresStore.lockPoolSize(PostgresURL.defaultPoolSize) : studies.count
            var inside = 0
            for await _ in entered {
                inside += 1
                if inside == holders { break }
            }
            await release.open()
            var finished: [String] = []
            for walk in walks { finished.append(try await walk.value ?? "") }
            #expect(finished == studies.map(\.id))
            if case .postgres(let url) = store.location {
                // A ticker turned away (lock_timeout) and then a waiting lock on the same instance: the timeout was reset.
                let other = try await PostgresStore.open(url, metrics: nil, logger: Logger(label: "store-test"))
                let (held, hold) = AsyncStream.makeStream(of: Void.self)
                let (free, freeing) = AsyncStream.makeStream(of: Void.self)
                let holder = Task { try await store.withStudyLock(studies[0].id, wait: true) { () async -> Int in
                    hold.yield()
                    for await _ in free { break }
                    return 1
                } }
                for await _ in held { break }
                let skipped: Int? = try await other.withStudyLock(studies[0].id, wait: false) { 2 }
                #expect(skipped == nil)
                let waiter = Task { try await other.withStudyLock(studies[0].id, wait: true) { 3 } }
                try await Task.sleep(for: .milliseconds(1500))
                freeing.yield()
                #expect(try await holder.value == 1)
                #expect(try await waiter.value == 3)
                await other.close()
            }
        }
    }
}

/// Lets every waiter through once opened.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

actor Order {
    var names: [String] = []
    func append(_ name: String) { names.append(name) }
}

/// Expects `body` to throw an ``APIError`` with `code`.
func expectCode(_ code: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    let error = await #expect(throws: APIError.self, sourceLocation: sourceLocation) { try await body() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
}
