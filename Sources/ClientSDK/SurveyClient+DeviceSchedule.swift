import Foundation
import Synchronization
import Logging
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// Old-style studies: the device downloads the survey list and fires surveys by their timings itself.
extension SurveyClient {
    // MARK: Device scheduling (old-style studies)

    /// Downloads the study's survey list (`/download_surveys`), forgets stored surveys the study no longer has,
    /// and fires whatever the `timings` make due by the device clock. Returns the surveys that became available.
    /// Old-style studies poll this every `check_for_new_surveys_frequency_seconds`; it can also be called at any time.
    @discardableResult
    public func checkForSurveys() async throws(SurveyClientError) -> [StoredSurvey] {
        guard !lifecycle.isClosed else { throw .closed }
        let response = try await api.post("download_surveys", api.baseForm(state: state))
        guard response.status == 200, let list = try? response.decode([SurveyEntry].self) else {
            throw SurveyClientError(code: "download_failed", message: "download_surveys answered \(response.status)", status: response.status)
        }
        state.deviceSurveys = list
        state.lastSurveyCheck = WireTime.format(now(), milliseconds: true)
        let ids = Set(list.map(\.id))
        if state.scheduling == "device" {
            for stored in pendingSurveys() where !ids.contains(stored.surveyID) {
                removeSurvey(stored.surveyID)
            }
        }
        try save()
        return try runLocalSchedule()
    }

    /// Fires surveys of an old-style study whose `timings` fell due between the last evaluation and the device
    /// clock's now, in the device's time zone (the `Scheduling` module's rules). Each due survey is stored and
    /// surfaced exactly like a pushed one. Returns the surveys that became available.
    @discardableResult
    public func runLocalSchedule() throws(SurveyClientError) -> [StoredSurvey] {
        guard !lifecycle.isClosed else { throw .closed }
        guard state.scheduling == "device" else { return [] }
        let current = now()
        let from = state.localCheckedThrough.flatMap(WireTime.parse) ?? current
        guard current > from else { return [] }
        let zone = TimeZone(identifier: configuration.timeZone) ?? TimeZone(identifier: state.timeZone ?? "") ?? TimeZone(identifier: "UTC")!
        let context = ParticipantContext(timeZone: zone, registeredAt: .distantPast)
        var fired: [StoredSurvey] = []
        for entry in state.deviceSurveys {
            let schedules = OccurrenceCalculator.weeklySchedules(fromTimings: entry.timings ?? [])
            let due = OccurrenceCalculator.occurrences(of: schedules, for: context, after: from, through: current)
            let uuids = due.map { "local-\(entry.id)-\($0.localTimestamp)" }.filter { !state.seenUUIDs.contains($0) }
            guard let last = due.last, !uuids.isEmpty else { continue }
            var spec = entry
            spec.timings = nil
            var stored = StoredSurvey(entry: spec, scheduleUUIDs: uuids, sentTime: WireTime.beiweSentTime(last.dueAt),
                                      receivedAt: WireTime.format(current, milliseconds: true))
            if let existing = files.read(StoredSurvey.self, from: files.surveyURL(entry.id)) {
                stored.receivedAt = existing.receivedAt
                stored.scheduleUUIDs = existing.scheduleUUIDs + uuids.filter { !existing.scheduleUUIDs.contains($0) }
            }
            try writeSurvey(stored)
            state.remember(nonce: "", uuids: uuids)
            fired.append(stored)
        }
        state.localCheckedThrough = WireTime.format(current, milliseconds: true)
        try save()
        for stored in fired {
            record(category: "survey", name: "local_trigger", extra: ["survey_id": stored.surveyID])
            emit(.surveyAvailable(stored))
        }
        return fired
    }

    func startLocalSchedule() {
        guard localScheduleTask == nil else { return }
        localScheduleTask = background.spawn { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(30))
                guard !Task.isCancelled, let client = self else { return }
                await client.localScheduleTick()
            }
        }
    }

    func localScheduleTick() async {
        let frequency = TimeInterval(state.checkFrequencySeconds ?? 3600)
        let last = state.lastSurveyCheck.flatMap(WireTime.parse) ?? .distantPast
        do {
            if now().timeIntervalSince(last) >= frequency {
                try await checkForSurveys()
            } else {
                try runLocalSchedule()
            }
        } catch {
            emit(.error(error))
        }
    }
}
