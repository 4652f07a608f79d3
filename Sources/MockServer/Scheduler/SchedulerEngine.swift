import Foundation
import GRDB
import Logging
import Scheduling
import ServerSupport
import SurveyWire

/// Runs survey schedules: materializes occurrences, walks due moments in order, sends one push per
/// participant per moment (bundling every survey due), and records each outcome in the push log.
final class SchedulerEngine: Sendable {
    let store: Store
    let dispatcher: PushDispatcher
    let locks = StudyLocks()
    let realNow: @Sendable () -> Date
    let logger: Logger
    /// Pushes in flight at once within one moment.
    let parallelism = 64

    init(store: Store, dispatcher: PushDispatcher, realNow: @escaping @Sendable () -> Date, logger: Logger) {
        self.store = store
        self.dispatcher = dispatcher
        self.realNow = realNow
        self.logger = logger
    }

    /// The study's current time.
    func now(of study: StudyRecord) -> Date { study.now(real: realNow()) }

    // MARK: Clock

    /// Applies a clock request under the study's lock and returns what fired.
    func moveClock(studyID: String, request: AdminWire.ClockRequest) async throws -> AdminWire.ClockResult {
        try await locks.withLock(studyID) {
            guard var study = try await store.read({ db in try StudyRecord.fetchOne(db, key: studyID) }) else {
                throw MockServerError.notFound("study", studyID)
            }
            let current = self.now(of: study)
            let target: Date
            if let freeze = request.freezeAt {
                guard let t = WireTime.parse(freeze) else {
                    throw MockServerError.badField("freeze_at", "freeze_at must be an RFC 3339 time")
                }
                target = t
                study.clockMode = "frozen"
            } else if let seconds = request.advanceSeconds {
                target = current.addingTimeInterval(TimeInterval(seconds))
                study.clockMode = "frozen"
            } else {
                study.clockMode = "real"
                study.frozenAt = nil
                target = self.realNow()
            }
            // Every due moment between the two times is walked (and occurrences materialized up to the target): one
            // `freeze_at` or `advance_seconds` goes forward at most 400 days. Going back walks nothing and is not limited,
            // and a return to real time is always allowed (it walks what lies between, as far as that is).
            let span = target.timeIntervalSince(current)
            guard request.real != nil || span <= TimeInterval(WireLimits.clockMoveSeconds.upperBound) else {
                let field = request.freezeAt != nil ? "freeze_at" : "advance_seconds"
                throw APIError(.badRequest, code: "clock_move_too_far",
                               "\(field) would move the study's clock \(Int(span / 86_400)) days from \(WireTime.format(current)); "
                                   + "one move goes forward at most 400 days, so move it in steps", field: field)
            }
            if study.clockMode == "frozen" { study.frozenAt = current.timeIntervalSince1970 }
            let snapshot = study
            try await store.write { db in try snapshot.update(db) }
            let fired = try await self.runDue(study: study, from: current, through: target)
            if study.clockMode == "frozen" {
                study.frozenAt = target.timeIntervalSince1970
                let final = study
                try await store.write { db in try final.update(db) }
            }
            return AdminWire.ClockResult(now: WireTime.format(target), mode: study.clockMode, fired: fired.map(\.view))
        }
    }

    /// Sends everything due up to the study's current time (used by the real-time ticker and after token changes).
    @discardableResult
    func tick(studyID: String) async throws -> [PushRecord] {
        try await locks.withLock(studyID) {
            guard let study = try await store.read({ db in try StudyRecord.fetchOne(db, key: studyID) }), study.isServerScheduled else {
                return []
            }
            let now = self.now(of: study)
            return try await self.runDue(study: study, from: now, through: now)
        }
    }

    /// Recomputes one survey's occurrences for every registered participant (after create, edit or delete).
    func surveyChanged(studyID: String, surveyID: String) async throws {
        try await locks.withLock(studyID) {
            guard let study = try await store.read({ db in try StudyRecord.fetchOne(db, key: studyID) }) else { return }
            let now = self.now(of: study)
            try await store.write { db in
                guard let record = try SurveyRecord.fetchOne(db, key: surveyID) else { return }
                let survey = PreparedSurvey(record)
                var batch = try PlanningBatch(db, studyID: studyID)
                let participants = try ParticipantRecord.filter(sql: "study_id = ? AND registered_at IS NOT NULL", arguments: [studyID]).fetchAll(db)
                for participant in participants {
                    try OccurrencePlanner.recompute(db, survey: survey, participant: participant, now: now, batch: &batch)
                }
            }
        }
    }

    /// Recomputes a participant's occurrences (after registration or an intervention date).
    func participantChanged(studyID: String, patientID: String) async throws {
        try await locks.withLock(studyID) {
            guard let study = try await store.read({ db in try StudyRecord.fetchOne(db, key: studyID) }) else { return }
            let now = self.now(of: study)
            try await store.write { db in
                guard let participant = try ParticipantRecord.fetchOne(db, key: patientID) else { return }
                let surveys = try SurveyRecord.filter(sql: "study_id = ?", arguments: [studyID]).fetchAll(db).map(PreparedSurvey.init)
                for survey in surveys where survey.quarantined {
                    self.logger.error("stored survey has unusable schedules; it is not planned", metadata: [
                        "study_id": "\(studyID)", "survey_id": "\(survey.record.id)"])
                }
                var batch = PlanningBatch()
                if participant.materializedThrough == nil {
                    try OccurrencePlanner.extend(db, participant: participant, surveys: surveys,
                                                 through: now.addingTimeInterval(OccurrencePlanner.horizon), batch: &batch)
                } else {
                    for survey in surveys {
                        try OccurrencePlanner.recompute(db, survey: survey, participant: participant, now: now, batch: &batch)
                    }
                }
            }
        }
    }

    // MARK: Due processing (caller holds the study lock)

    private struct Due: Sendable {
        var participant: ParticipantRecord
        var occurrences: [OccurrenceRecord]
    }

    /// Walks the due moments in `(from, target]` in order; at each, every participant gets one push with all their
    /// pending occurrences due by then (so a backlog from before `from` rides on the first push that goes out).
    /// A final pass at `target` sends what is left once its back-off ended, or a backlog when no moment fell in the span.
    private func runDue(study: StudyRecord, from: Date, through target: Date) async throws -> [PushRecord] {
        guard study.isServerScheduled else { return [] }
        if let reason = study.quarantineReason {
            throw APIError(.conflict, code: "study_quarantined", "the stored study cannot be scheduled: \(reason)")
        }
        let studyID = study.id
        // Materialize, in day-sized steps, everyone whose occurrences do not reach the horizon past the target
        // (so a real-time tick every second touches no participant most of the time).
        let horizonEnd = target.addingTimeInterval(OccurrencePlanner.horizon)
        let started = ContinuousClock.now
        let extended = try await store.write { db -> Int in
            let participants = try ParticipantRecord.filter(sql: """
                study_id = ? AND registered_at IS NOT NULL AND retired = 0
                AND (materialized_through IS NULL OR materialized_through < ?)
                """, arguments: [studyID, horizonEnd.timeIntervalSince1970]).fetchAll(db)
            guard !participants.isEmpty else { return 0 }
            let surveys = try SurveyRecord.filter(sql: "study_id = ?", arguments: [studyID]).fetchAll(db).map(PreparedSurvey.init)
            for survey in surveys where survey.quarantined {
                self.logger.error("stored survey has unusable schedules; it is not planned", metadata: [
                    "study_id": "\(studyID)", "survey_id": "\(survey.record.id)"])
            }
            var batch = try PlanningBatch(db, studyID: studyID)
            for participant in participants {
                try OccurrencePlanner.extend(db, participant: participant, surveys: surveys, through: horizonEnd.addingTimeInterval(86400),
                                             batch: &batch)
            }
            return participants.count
        }
        let materialized = ContinuousClock.now
        let moments = try await store.read { db in
            try Double.fetchAll(db, sql: """
                SELECT DISTINCT due_at FROM occurrence WHERE study_id = ? AND status = 'pending' AND due_at > ? AND due_at <= ? ORDER BY due_at
                """, arguments: [studyID, from.timeIntervalSince1970, target.timeIntervalSince1970])
        }
        var fired: [PushRecord] = []
        var lastMoment: Double = -.infinity
        for moment in moments where moment > lastMoment {
            lastMoment = moment
            fired += try await fire(study: study, at: Date(timeIntervalSince1970: moment))
        }
        // Retries whose wait ended after the last due moment, and catch-up after a token change.
        if target.timeIntervalSince1970 > lastMoment {
            fired += try await fire(study: study, at: target)
        }
        if !fired.isEmpty || extended > 0 {
            logger.info("scheduler ran", metadata: [
                "study_id": "\(studyID)", "through": "\(WireTime.format(target))", "extended_participants": "\(extended)",
                "materialize_ms": "\((materialized - started).milliseconds)", "moments": "\(moments.count)",
                "pushes": "\(fired.count)", "fire_ms": "\((ContinuousClock.now - materialized).milliseconds)",
            ])
        }
        return fired
    }

    /// What one participant's turn at a due moment produced, written with everyone else's in one transaction.
    private struct Attempt: Sendable {
        enum ParticipantUpdate: Sendable {
            case none
            case delivered
            case unregistered(token: String)
            case backOff(until: Double, count: Int)
        }
        var records: [PushRecord] = []
        var sent: [(occurrence: String, push: String)] = []
        var expired: [(occurrence: String, push: String)] = []
        var update: ParticipantUpdate = .none
    }

    /// Sends, at study time `moment`, one push per participant bundling all their pending occurrences due by then.
    private func fire(study: StudyRecord, at moment: Date) async throws -> [PushRecord] {
        let studyID = study.id
        let maxDelay = study.maxDelay
        let t = moment.timeIntervalSince1970
        let due: [Due] = try await store.read { db in
            let rows = try OccurrenceRecord.filter(sql: "study_id = ? AND status = 'pending' AND due_at <= ?", arguments: [studyID, t])
                .order(sql: "patient_id, due_at").fetchAll(db)
            guard !rows.isEmpty else { return [] }
            let people = try ParticipantRecord.fetchAll(db, sql: """
                SELECT * FROM participant WHERE retired = 0 AND patient_id IN
                (SELECT DISTINCT patient_id FROM occurrence WHERE study_id = ? AND status = 'pending' AND due_at <= ?)
                """, arguments: [studyID, t])
            let byID = Dictionary(uniqueKeysWithValues: people.map { ($0.patientId, $0) })
            var groups: [String: [OccurrenceRecord]] = [:]
            for row in rows { groups[row.patientId, default: []].append(row) }
            return groups.keys.sorted().compactMap { id in byID[id].map { Due(participant: $0, occurrences: groups[id]!) } }
        }
        guard !due.isEmpty else { return [] }
        let attempts = try await withThrowingTaskGroup(of: Attempt.self) { group in
            var results: [Attempt] = []
            var iterator = due.makeIterator()
            for _ in 0..<parallelism {
                guard let next = iterator.next() else { break }
                group.addTask { await self.attempt(next, studyID: studyID, at: t, maxDelay: maxDelay) }
            }
            while let done = try await group.next() {
                results.append(done)
                if let next = iterator.next() {
                    group.addTask { await self.attempt(next, studyID: studyID, at: t, maxDelay: maxDelay) }
                }
            }
            return results
        }
        try await store.write { db in
            let mark = try db.cachedStatement(sql: "UPDATE occurrence SET status = ?, push_uuid = ? WHERE uuid = ?")
            for attempt in attempts {
                for record in attempt.records { try record.insert(db) }
                for (occurrence, push) in attempt.sent { try mark.execute(arguments: ["sent", push, occurrence]) }
                for (occurrence, push) in attempt.expired { try mark.execute(arguments: ["expired", push, occurrence]) }
                guard let patientID = attempt.records.first?.patientId else { continue }
                switch attempt.update {
                case .none: break
                case .delivered:
                    try db.execute(sql: "UPDATE participant SET retry_after = NULL, retry_count = 0 WHERE patient_id = ?", arguments: [patientID])
                case .unregistered(let token):
                    try db.execute(sql: "UPDATE participant SET token_unregistered_at = ? WHERE patient_id = ? AND push_token = ?",
                                   arguments: [t, patientID, token])
                case .backOff(let until, let count):
                    try db.execute(sql: "UPDATE participant SET retry_after = ?, retry_count = ? WHERE patient_id = ?",
                                   arguments: [until, count, patientID])
                }
            }
        }
        return attempts.flatMap(\.records).sorted { ($0.patientId, $0.dueAt) < ($1.patientId, $1.dueAt) }
    }

    /// Back-off after a failed push: 60 s, doubling per consecutive failure, at most an hour (study time).
    static func backOff(failures: Int) -> TimeInterval {
        min(60 * pow(2, Double(min(failures, 10))), 3600)
    }

    private func attempt(_ due: Due, studyID: String, at t: Double, maxDelay: TimeInterval) async -> Attempt {
        var result = Attempt()
        let expired = due.occurrences.filter { t - $0.dueAt > maxDelay }
        let live = due.occurrences.filter { t - $0.dueAt <= maxDelay }
        if !expired.isEmpty {
            let record = Self.logRecord(studyID: studyID, patientID: due.participant.patientId, occurrences: expired, sentAt: nil,
                                        status: "expired", relayStatus: nil, reason: "older than max_delay_minutes", nonce: nil)
            result.records.append(record)
            result.expired = expired.map { ($0.uuid, record.uuid) }
        }
        let p = due.participant
        guard !live.isEmpty, let token = p.pushToken, p.tokenUnregisteredAt == nil else { return result }
        if let retryAfter = p.retryAfter, retryAfter > t { return result }

        var surveyIDs: [String] = []
        var uuids: [String: [String]] = [:]
        for o in live {
            if !surveyIDs.contains(o.surveyId) { surveyIDs.append(o.surveyId) }
            uuids[o.surveyId, default: []].append(o.uuid)
        }
        let pushID = UUID().uuidString.lowercased()
        let nonce = Identifiers.nonce()
        let minDue = live.map(\.dueAt).min() ?? t
        let push = SurveyPush(surveyIDs: surveyIDs, sentTime: WireTime.beiweSentTime(Date(timeIntervalSince1970: minDue)),
                              nonce: nonce, surveyUUIDs: uuids)
        let outcome = await dispatcher.send(token: token, os: p.os, push: push, id: pushID)
        var record = Self.logRecord(studyID: studyID, patientID: p.patientId, occurrences: live,
                                    sentAt: outcome.status == "sent" ? t : nil, status: outcome.status,
                                    relayStatus: outcome.relayStatus, reason: outcome.reason, nonce: nonce)
        record.uuid = pushID
        record.relayMessageId = outcome.messageID
        result.records.append(record)
        switch outcome.status {
        case "sent":
            result.sent = live.map { ($0.uuid, pushID) }
            result.update = .delivered
        case "token_unregistered":
            result.update = .unregistered(token: token)
        default:
            result.update = .backOff(until: t + Self.backOff(failures: p.retryCount), count: p.retryCount + 1)
            logger.info("push not delivered", metadata: ["patient_id": "\(p.patientId)", "status": "\(outcome.status)",
                                                         "relay_status": "\(outcome.relayStatus.map(String.init) ?? "-")"])
        }
        return result
    }

    private static func logRecord(studyID: String, patientID: String, occurrences: [OccurrenceRecord], sentAt: Double?, status: String,
                                  relayStatus: Int?, reason: String?, nonce: String?) -> PushRecord {
        var surveyIDs: [String] = []
        for o in occurrences where !surveyIDs.contains(o.surveyId) { surveyIDs.append(o.surveyId) }
        return PushRecord(
            seq: nil, uuid: UUID().uuidString.lowercased(), studyId: studyID, patientId: patientID,
            surveyIds: (try? WireJSON.encodeString(surveyIDs)) ?? "[]",
            scheduleUuids: (try? WireJSON.encodeString(occurrences.map(\.uuid))) ?? "[]",
            dueAt: occurrences.map(\.dueAt).min() ?? 0, sentAt: sentAt, status: status, relayStatus: relayStatus,
            relayReason: reason, nonce: nonce, relayMessageId: nil)
    }
}

extension Duration {
    /// Whole milliseconds, for log metadata.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
