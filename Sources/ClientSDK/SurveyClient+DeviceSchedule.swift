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
        // A device clock that went back evaluates nothing, and keeps the point it had reached.
        guard current > from else { return [] }
        let zone = TimeZone(identifier: configuration.timeZone) ?? TimeZone(identifier: state.timeZone ?? "") ?? TimeZone(identifier: "UTC")!
        var fired: [StoredSurvey] = []
        for firing in DeviceSchedule.due(state.deviceSurveys, zone: zone, after: from, through: current, seen: Set(state.seenUUIDs)) {
            let uuids = firing.uuids
            var stored = StoredSurvey(entry: firing.entry, scheduleUUIDs: uuids, sentTime: firing.sentTime,
                                      receivedAt: WireTime.format(current, milliseconds: true))
            if let existing = files.read(StoredSurvey.self, from: files.surveyURL(firing.entry.id)) {
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
        runtime.localSchedule.send(.begin(firstWait: DeviceSchedule.tickInterval))
    }

    /// One tick of the device's schedule: download the list when it is due (``DeviceSchedule/tick(now:lastCheck:frequencySeconds:)``),
    /// else evaluate the timings held.
    func localScheduleTick() async {
        do {
            switch DeviceSchedule.tick(now: now(), lastCheck: state.lastSurveyCheck.flatMap(WireTime.parse), frequencySeconds: state.checkFrequencySeconds) {
            case .download: try await checkForSurveys()
            case .evaluate: try runLocalSchedule()
            }
        } catch {
            emit(.error(error))
        }
    }
}
