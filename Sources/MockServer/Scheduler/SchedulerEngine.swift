import Foundation
import Logging
import Scheduling
import ServerSupport
import SurveyWire

/// Runs survey schedules: materializes occurrences, walks due moments in order, sends one push per
/// participant per moment (bundling every survey due), and records each outcome in the push log.
final class SchedulerEngine: Sendable {
    /// The scheduler's part of the store, and the study rows it moves the clock of.
    let store: any SchedulingStore & StudyAdminStore
    let dispatcher: PushDispatcher
    let realNow: @Sendable () -> Date
    let logger: Logger
    /// Pushes in flight at once within one moment.
    let parallelism = 64

    init(store: any SchedulingStore & StudyAdminStore, dispatcher: PushDispatcher, realNow: @escaping @Sendable () -> Date, logger: Logger) {
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
        try await locked(studyID) {
            guard var study = try await store.study(studyID) else {
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
            // `freeze_at` or `advance_seconds` goes forward at most 400 days, and a return to real time walks what lies
            // between, as far as that is. A study's clock never goes back (its pushes, retries and expiries are history):
            // a test that wants an earlier time starts a study frozen there (or resets the server).
            let span = target.timeIntervalSince(current)
            guard span >= 0 else {
                let field = request.freezeAt != nil ? "freeze_at" : "real"
                throw APIError(.conflict, code: "clock_move_backwards",
                               "\(field) would move the study's clock back from \(WireTime.format(current)) to \(WireTime.format(target)); "
                                   + "a study's clock only goes forward: create a study frozen at the earlier time, or POST /__admin/reset",
                               field: field)
            }
            guard request.real != nil || span <= TimeInterval(WireLimits.clockMoveSeconds.upperBound) else {
                let field = request.freezeAt != nil ? "freeze_at" : "advance_seconds"
                throw APIError(.badRequest, code: "clock_move_too_far",
                               "\(field) would move the study's clock \(Int(span / 86_400)) days from \(WireTime.format(current)); "
                                   + "one move goes forward at most 400 days, so move it in steps", field: field)
            }
            if study.clockMode == "frozen" { study.frozenAt = current.timeIntervalSince1970 }
            try await store.updateStudy(study)
            let fired = try await self.runDue(study: study, from: current, through: target)
            if study.clockMode == "frozen" {
                study.frozenAt = target.timeIntervalSince1970
                try await store.updateStudy(study)
            }
            return AdminWire.ClockResult(now: WireTime.format(target), mode: study.clockMode, fired: fired.map(\.view))
        }
    }

    /// Sends everything due up to the study's current time (used by the real-time ticker and after token changes).
    /// With `wait: false` (the ticker), a study another instance is walking is skipped: that instance sends what is due.
    @discardableResult
    func tick(studyID: String, wait: Bool = true) async throws -> [PushRecord] {
        try await store.withStudyLock(studyID, wait: wait) {
            guard let study = try await self.store.study(studyID), study.isServerScheduled else { return [] }
            let now = self.now(of: study)
            return try await self.runDue(study: study, from: now, through: now)
        } ?? []
    }

    /// Runs `body` holding the study's lock, waiting for it.
    private func locked<T: Sendable>(_ studyID: String, _ body: @Sendable () async throws -> T) async throws -> T {
        guard let value = try await store.withStudyLock(studyID, wait: true, body) else {
            throw APIError(.serviceUnavailable, code: "study_busy", "the study's scheduling lock could not be taken")
        }
        return value
    }

    /// Recomputes one survey's occurrences for every registered participant (after create, edit or delete).
    func surveyChanged(studyID: String, surveyID: String) async throws {
        try await locked(studyID) {
            guard let study = try await self.store.study(studyID), let record = try await self.store.survey(surveyID) else { return }
            let now = self.now(of: study)
            let survey = PreparedSurvey(record)
            let participants = try await self.store.registeredParticipants(studyID: studyID)
            guard !participants.isEmpty else { return }
            var batch = PlanningBatch(interventions: try await self.store.studyInterventionDates(studyID: studyID))
            let pending = try await self.store.pendingOccurrences(surveyID: surveyID, patientIDs: participants.map(\.patientId))
            var plan = PlanChanges()
            for participant in participants {
                OccurrencePlanner.recompute(survey: survey, participant: participant, pending: pending[participant.patientId] ?? [],
                                            now: now, batch: &batch, plan: &plan)
            }
            try await self.store.applyPlan(plan)
        }
    }

    /// Recomputes a participant's occurrences (after registration or an intervention date).
    /// Participants of one study are planned side by side (the study's lock held shared), never during a walk.
    func participantChanged(studyID: String, patientID: String) async throws {
        try await store.withParticipantLock(studyID: studyID, patientID: patientID) {
            guard let (participant, study) = try await self.store.participantAndStudy(patientID), study.id == studyID else { return }
            let now = self.now(of: study)
            let surveys = try await self.store.allSurveys(studyID: studyID).map(PreparedSurvey.init)
            self.logQuarantined(surveys, studyID: studyID)
            var batch = PlanningBatch(interventions: [patientID: try await self.store.interventionDates(patientID: patientID)])
            var plan = PlanChanges()
            if participant.materializedThrough == nil {
                OccurrencePlanner.extend(participant: participant, surveys: surveys, through: now.addingTimeInterval(OccurrencePlanner.horizon),
                                         batch: &batch, plan: &plan)
            } else {
                for survey in surveys {
                    let pending = try await self.store.pendingOccurrences(surveyID: survey.record.id, patientIDs: [patientID])
                    OccurrencePlanner.recompute(survey: survey, participant: participant, pending: pending[patientID] ?? [], now: now,
                                                batch: &batch, plan: &plan)
                }
            }
            try await self.store.applyPlan(plan)
        }
    }

    /// Sends one participant's occurrences that are due now and were held back (no token, or a token the relay had
    /// retired), after a token change. Holds that participant's lock, not the study's: a token change costs one push,
    /// not a walk of the study with its relay calls (44.5 s in a 640-participant study behind a slow relay).
    /// Due moments are not walked: everything due rides on one push, as the walk's last pass sends a backlog.
    @discardableResult
    func catchUp(studyID: String, patientID: String) async throws -> [PushRecord] {
        try await store.withParticipantLock(studyID: studyID, patientID: patientID) {
            guard let study = try await self.store.study(studyID), study.isServerScheduled, study.quarantineReason == nil else { return [] }
            return try await self.fire(study: study, at: self.now(of: study), patientID: patientID)
        }
    }

    private func logQuarantined(_ surveys: [PreparedSurvey], studyID: String) {
        for survey in surveys where survey.quarantined {
            logger.error("stored survey has unusable schedules; it is not planned", metadata: [
                "study_id": "\(studyID)", "survey_id": "\(survey.record.id)"])
        }
    }

    // MARK: Due processing (caller holds the study lock)

    /// Walks the due moments and the moments back-offs end in `(from, target]`, in order; at each, every participant
    /// gets one push with all their pending occurrences due by then (so a backlog from before `from` rides on the first
    /// push that goes out). A final pass at `target` sends a backlog when no moment fell in the span.
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
        let participants = try await store.participantsToExtend(studyID: studyID, horizon: horizonEnd.timeIntervalSince1970)
        if !participants.isEmpty {
            let surveys = try await store.allSurveys(studyID: studyID).map(PreparedSurvey.init)
            logQuarantined(surveys, studyID: studyID)
            var batch = PlanningBatch(interventions: try await store.studyInterventionDates(studyID: studyID))
            var plan = PlanChanges()
            for participant in participants {
                OccurrencePlanner.extend(participant: participant, surveys: surveys, through: horizonEnd.addingTimeInterval(86400),
                                         batch: &batch, plan: &plan)
            }
            try await store.applyPlan(plan)
        }
        let extended = participants.count
        let materialized = ContinuousClock.now
        let moments = try await store.dueMoments(studyID: studyID, after: from.timeIntervalSince1970, through: target.timeIntervalSince1970)
        var fired: [PushRecord] = []
        var lastMoment: Double = -.infinity
        var walked = 0
        var index = moments.startIndex
        // Due moments and the moments back-offs end, in time order: a retry happens when its wait is over, however
        // the clock gets there (one move through a five-hour outage retries as often as five hours of one-minute moves).
        while true {
            while index < moments.endIndex, moments[index] <= lastMoment { index += 1 }
            let nextDue = index < moments.endIndex ? moments[index] : nil
            let window = (after: max(lastMoment, from.timeIntervalSince1970),
                          through: min(nextDue ?? target.timeIntervalSince1970, target.timeIntervalSince1970))
            let retry = try await store.nextRetryMoment(studyID: studyID, after: window.after, through: window.through)
            // Beiwe's resends of unconfirmed pushes are moments too, walked as retries are.
            let resend = try await store.nextResendMoment(studyID: studyID, after: window.after, through: window.through)
            guard let moment = [nextDue, retry, resend].compactMap({ $0 }).min() else { break }
            // A walk whose client has gone (its connection closed) stops between moments; what it sent is recorded.
            try Task.checkCancellation()
            lastMoment = moment
            walked += 1
            fired += try await fire(study: study, at: Date(timeIntervalSince1970: moment))
        }
        // Retries whose wait ended after the last due moment, and catch-up after a token change.
        if target.timeIntervalSince1970 > lastMoment {
            fired += try await fire(study: study, at: target)
        }
        if !fired.isEmpty || extended > 0 {
            logger.info("scheduler ran", metadata: [
                "study_id": "\(studyID)", "through": "\(WireTime.format(target))", "extended_participants": "\(extended)",
                "materialize_ms": "\((materialized - started).milliseconds)", "moments": "\(walked)",
                "pushes": "\(fired.count)", "fire_ms": "\((ContinuousClock.now - materialized).milliseconds)",
            ])
        }
        return fired
    }

    /// Sends, at study time `moment`, one push per participant bundling all their pending occurrences due by then
    /// (with `patientID`, that participant's only).
    private func fire(study: StudyRecord, at moment: Date, patientID: String? = nil) async throws -> [PushRecord] {
        let studyID = study.id
        let maxDelay = study.maxDelay
        let t = moment.timeIntervalSince1970
        let resendPeriod = ResendRule.period(minutes: study.settingsObject["resend_period_minutes"]?.numberValue)
        var due = try await store.dueWork(studyID: studyID, at: t, patientID: patientID)
        // Resends ride on the participant's push of this moment, or on one of their own.
        for resend in try await store.dueResends(studyID: studyID, at: t, patientID: patientID) {
            if let index = due.firstIndex(where: { $0.participant.patientId == resend.participant.patientId }) {
                due[index].resends = resend.occurrences
            } else {
                due.append(DueWork(participant: resend.participant, occurrences: [], resends: resend.occurrences))
            }
        }
        guard !due.isEmpty else { return [] }
        let attempts = try await withThrowingTaskGroup(of: FiringOutcome.self) { group in
            var results: [FiringOutcome] = []
            var iterator = due.makeIterator()
            for _ in 0..<parallelism {
                guard let next = iterator.next() else { break }
                group.addTask { await self.attempt(next, studyID: studyID, at: t, maxDelay: maxDelay, resendPeriod: resendPeriod) }
            }
            while let done = try await group.next() {
                results.append(done)
                if let next = iterator.next() {
                    group.addTask { await self.attempt(next, studyID: studyID, at: t, maxDelay: maxDelay, resendPeriod: resendPeriod) }
                }
            }
            return results
        }
        // What the relay was sent is recorded whatever happens to the request walking the clock (issue 51): a client
        // that left mid-walk cancelled this write on PostgreSQL, and the pushes the relay had accepted went out again.
        // An unstructured task does not inherit the caller's cancellation; the walk stops at its next moment instead.
        let store = self.store
        try await Task { try await store.recordFiring(attempts, at: t) }.value
        return attempts.flatMap(\.records).sorted { ($0.patientId, $0.dueAt) < ($1.patientId, $1.dueAt) }
    }

    /// Back-off after a failed push: 60 s, doubling per consecutive failure, at most an hour (study time).
    static func backOff(failures: Int) -> TimeInterval {
        min(60 * pow(2, Double(min(failures, 10))), 3600)
    }

    private func attempt(_ due: DueWork, studyID: String, at t: Double, maxDelay: TimeInterval, resendPeriod: Double) async -> FiringOutcome {
        var result = FiringOutcome()
        let expired = due.occurrences.filter { t - $0.dueAt > maxDelay }
        let live = due.occurrences.filter { t - $0.dueAt <= maxDelay }
        if !expired.isEmpty {
            let record = Self.logRecord(studyID: studyID, patientID: due.participant.patientId, occurrences: expired, sentAt: nil,
                                        status: "expired", relayStatus: nil, reason: "older than max_delay_minutes", nonce: nil)
            result.records.append(record)
            result.expired = expired.map { ($0.uuid, record.uuid) }
        }
        let p = due.participant
        let resends = due.resends
        guard !live.isEmpty || !resends.isEmpty, let token = p.pushToken, p.tokenUnregisteredAt == nil else { return result }
        if let retryAfter = p.retryAfter, retryAfter > t {
            // A resend waits for the back-off to end, as a retry does.
            result.resendAt = resends.map { ($0.uuid, retryAfter) }
            return result
        }
        let carried = live + resends

        var surveyIDs: [String] = []
        var uuids: [String: [String]] = [:]
        for o in carried {
            if !surveyIDs.contains(o.surveyId) { surveyIDs.append(o.surveyId) }
            uuids[o.surveyId, default: []].append(o.uuid)
        }
        let pushID = UUID().uuidString.lowercased()
        let nonce = Identifiers.nonce()
        let minDue = carried.map(\.dueAt).min() ?? t
        let push = SurveyPush(surveyIDs: surveyIDs, sentTime: WireTime.beiweSentTime(Date(timeIntervalSince1970: minDue)),
                              nonce: nonce, surveyUUIDs: uuids)
        let outcome = await dispatcher.send(token: token, os: p.os, push: push, id: pushID)
        var record = Self.logRecord(studyID: studyID, patientID: p.patientId, occurrences: carried,
                                    sentAt: outcome.status == "sent" ? t : nil, status: outcome.status,
                                    relayStatus: outcome.relayStatus, reason: outcome.reason, nonce: nonce)
        record.uuid = pushID
        record.relayMessageId = outcome.messageID
        record.resend = !resends.isEmpty
        result.records.append(record)
        switch outcome.status {
        case "sent":
            result.sent = carried.map { ($0.uuid, pushID) }
            // Each occurrence's next resend, should its receipt not be reported: Beiwe's rule for iOS apps from 2024.27.
            let eligible = ResendRule.eligible(os: p.os, versionName: p.versionName)
            result.resendAt = carried.map { ($0.uuid, eligible ? ResendRule.nextResend(lastSent: t, period: resendPeriod, dueAt: $0.dueAt) : nil) }
            result.update = .delivered
        case "token_unregistered":
            result.update = .unregistered(token: token)
        default:
            let until = t + Self.backOff(failures: p.retryCount)
            result.resendAt = resends.map { ($0.uuid, until) }
            result.update = .backOff(until: until, count: p.retryCount + 1)
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
