import ClientSDK
import Foundation
import Scheduling
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The server's scheduler through the admin API: edits, deletes, token loss and clocks.
@Suite(.timeLimit(.minutes(2))) struct SchedulerTests {
    @Test func editingASurveyNeverResendsAndDeletingDropsPending() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            let study = setup.study.studyID
            #expect(try await trio.admin.advanceClock(study: study, seconds: 120).fired.count == 1)

            // Beiwe #350/#407: an edit (content and an unchanged schedule) re-sends nothing.
            var edited = moodSurvey
            edited.name = "Weekly mood (v2)"
            try await trio.admin.replaceSurvey(setup.surveyID, edited)
            #expect(try await trio.admin.advanceClock(study: study, seconds: 60).fired.isEmpty)
            let nextWeek = try await trio.admin.occurrences(study: study)
            #expect(nextWeek.map(\.localTime) == ["2026-05-11T09:00"])

            // Moving the time replaces the pending occurrence, not the sent one; a time already past today
            // does not fire for today.
            edited.schedules = [.weekly(dayOfWeek: 1, time: LocalTime(hour: 8, minute: 30), from: nil, until: nil)]
            try await trio.admin.replaceSurvey(setup.surveyID, edited)
            #expect(try await trio.admin.occurrences(study: study).map(\.localTime) == ["2026-05-11T08:30"])
            let all = try await trio.admin.occurrences(study: study, all: true)
            #expect(all.filter { $0.status == "sent" }.map(\.localTime) == ["2026-05-04T09:00"])

            // Beiwe #6: a deleted survey is never delivered.
            try await trio.admin.deleteSurvey(setup.surveyID)
            #expect(try await trio.admin.occurrences(study: study).isEmpty)
            #expect(try await trio.admin.advanceClock(study: study, seconds: 8 * 86400).fired.isEmpty)
            let gone = try await mobilePost(trio, "/download_survey", patientID: setup.credentials.patientID,
                                            password: "new-" + setup.credentials.password, extra: [("survey_id", setup.surveyID)])
            #expect(gone.status == 404)
            await client.close()
        }
    }

    @Test func unregisteredTokenHoldsPushesUntilANewTokenArrivesThenBundlesThem() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let laterID = try await trio.admin.createSurvey(study: setup.study.studyID, tenOClockSurvey)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            let token = try #require(await client.pushToken)
            await client.close()
            // The app was reinstalled: its old token is dead at the relay.
            #expect(try await trio.http.send(TransportRequest(method: "DELETE", url: trio.relay.url + "/v1/devices/\(token)")).status == 204)

            let study = setup.study.studyID
            // No more attempts while the token is dead, not even for the 10:00 survey.
            try await expectHeldAsUnregistered(trio, setup, relayStatus: 404)

            // A new token: both held occurrences go out at once, in one push.
            let fresh = try await sendFreshToken(trio, setup)
            let pushes = try await trio.admin.pushes(study: study)
            #expect(pushes.map(\.status) == ["token_unregistered", "sent"])
            #expect(pushes.last?.surveyIDs == [setup.surveyID, laterID])
            #expect(pushes.last?.scheduleUUIDs.count == 2)
            let pending = try await trio.control.device(fresh).pending
            #expect(pending.count == 1)
            #expect(pending.first?.payload["survey_ids"]?.stringValue == "[\"\(setup.surveyID)\",\"\(laterID)\"]")
        }
    }

    /// A relay that lost its state (restarted without `--store`; here its reset, which forgets the same) answers the
    /// old token 400 `INVALID_ARGUMENT`, as FCM answers a token it never issued: the server stops sending to it (it
    /// retried for ever before) and a new token from `/set_fcm_token` gets the held occurrence out at once.
    @Test func aRelayThatForgotTheTokenIsTreatedAsUnregistered() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            await client.close()
            _ = try await trio.http.send(try TransportRequest.json(trio.relay.url + "/__control/reset", body: JSONValue.object([:])))
            try await expectHeldAsUnregistered(trio, setup, relayStatus: 400)
            _ = try await sendFreshToken(trio, setup)
            #expect(try await trio.admin.pushes(study: setup.study.studyID).map(\.status) == ["token_unregistered", "sent"])
        }
    }

    /// `/set_fcm_token` catches up its own participant under that participant's lock. It walked the whole study under
    /// the study's lock, relay calls included, so a slow relay held every registration of the study: here the relay is
    /// frozen (SIGSTOP) while A's catch-up push waits for it, and B still registers at once.
    @Test func aNewTokensCatchUpDoesNotHoldTheStudy() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let other = try await trio.admin.createParticipants(study: setup.study.studyID)[0]
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            let token = try #require(await client.pushToken)
            await client.close()
            #expect(try await trio.http.send(TransportRequest(method: "DELETE", url: trio.relay.url + "/v1/devices/\(token)")).status == 204)
            // 09:01: the 09:00 push found the token dead; the occurrence is held (within the study's max delay).
            #expect(try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120).fired.map(\.status) == ["token_unregistered"])
            let fresh = try await trio.control.registerDevice(platform: "android")
            kill(trio.relay.pid, SIGSTOP)
            let catchUp = Task {
                try await mobilePost(trio, "/set_fcm_token", patientID: setup.credentials.patientID,
                                     password: "new-" + setup.credentials.password, extra: [("fcm_token", fresh)]).status
            }
            try await Task.sleep(for: .milliseconds(500))
            let started = ContinuousClock.now
            let registered = try await mobilePost(trio, "/register_user", patientID: other.patientID, password: other.password, deviceID: "b",
                                                  extra: [("new_password", "new-b"), ("timezone", "America/Chicago"), ("fcm_token", "token-b"),
                                                          ("phone_number", "0")])
            let waited = ContinuousClock.now - started
            kill(trio.relay.pid, SIGCONT)
            #expect(registered.status == 200)
            #expect(waited < .seconds(3), "B's registration waited \(waited) behind A's catch-up")
            #expect(try await catchUp.value == 204)
            // The catch-up did reach the frozen relay (it timed out there, or got through once the relay went on).
            #expect(try await trio.admin.pushes(study: setup.study.studyID, patient: setup.credentials.patientID).count == 2)
        }
    }

    /// The 09:00 push finds the token dead (`relayStatus`): logged `token_unregistered`, the participant flagged, and
    /// nothing more sent for an hour.
    private func expectHeldAsUnregistered(_ trio: Trio, _ setup: StudySetup, relayStatus: Int) async throws {
        let study = setup.study.studyID
        let first = try await trio.admin.advanceClock(study: study, seconds: 120)
        #expect(first.fired.map(\.status) == ["token_unregistered"])
        #expect(first.fired.first?.relayStatus == relayStatus)
        #expect(try await trio.admin.participant(setup.credentials.patientID).pushTokenUnregistered)
        #expect(try await trio.admin.advanceClock(study: study, seconds: 3600).fired.isEmpty)
    }

    /// A new relay token, sent with `/set_fcm_token` (204); returns it.
    private func sendFreshToken(_ trio: Trio, _ setup: StudySetup) async throws -> String {
        let fresh = try await trio.control.registerDevice(platform: "android")
        let set = try await mobilePost(trio, "/set_fcm_token", patientID: setup.credentials.patientID,
                                       password: "new-" + setup.credentials.password, extra: [("fcm_token", fresh)])
        #expect(set.status == 204)
        return fresh
    }

    @Test func missingRelayIsLoggedAndRetried() async throws {
        try await Trio.with(.init(serverArguments: [])) { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            try await client.start()
            await trio.relay.stop()
            let study = setup.study.studyID
            let failed = try await trio.admin.advanceClock(study: study, seconds: 90)
            #expect(failed.fired.map(\.status) == ["relay_error"])
            #expect(failed.fired.first?.relayStatus == nil)
            // Still pending; not retried before the 60 s back-off ends, then retried.
            #expect(try await trio.admin.occurrences(study: study).first?.localTime == "2026-05-04T09:00")
            #expect(try await trio.admin.advanceClock(study: study, seconds: 20).fired.isEmpty)
            let retried = try await trio.admin.advanceClock(study: study, seconds: 20)
            #expect(retried.fired.map(\.status) == ["relay_error"])
            // The back-off doubles: the next try waits 120 s.
            #expect(try await trio.admin.advanceClock(study: study, seconds: 100).fired.isEmpty)
            #expect(try await trio.admin.advanceClock(study: study, seconds: 30).fired.map(\.status) == ["relay_error"])
            await client.close()
        }
    }

    @Test func occurrencesOlderThanMaxDelayExpireInsteadOfBeingSent() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "Short delay", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago), maxDelayMinutes: 30))
            let credentials = try await trio.admin.createParticipants(study: study.studyID)[0]
            _ = try await trio.admin.createSurvey(study: study.studyID, moodSurvey)
            let client = try SurveyClient(configuration: clientConfiguration(trio, credentials))
            try await client.start()
            await trio.relay.stop()
            #expect(try await trio.admin.advanceClock(study: study.studyID, seconds: 90).fired.map(\.status) == ["relay_error"])
            // The move walks each retry as its back-off ends (09:01, 09:03, 09:07, 09:15), then the occurrence is past
            // its 30 minutes at 09:31 and expires.
            let later = try await trio.admin.advanceClock(study: study.studyID, seconds: 2 * 3600)
            #expect(later.fired.map(\.status) == ["relay_error", "relay_error", "relay_error", "relay_error", "expired"])
            let all = try await trio.admin.occurrences(study: study.studyID, all: true)
            #expect(all.first { $0.localTime == "2026-05-04T09:00" }?.status == "expired")
            await client.close()
        }
    }

    @Test func clocksArePerStudy() async throws {
        try await Trio.with { trio in
            let a = try await StudySetup.make(trio)
            let b = try await StudySetup.make(trio)
            _ = try await trio.admin.advanceClock(study: a.study.studyID, seconds: 3600)
            #expect(try await trio.admin.clock(study: a.study.studyID).now == "2026-05-04T14:59:00Z")
            #expect(try await trio.admin.clock(study: b.study.studyID).now == "2026-05-04T13:59:00Z")
            let real = try await trio.admin.realClock(study: b.study.studyID)
            #expect(real.mode == "real")
            let frozen = try await trio.admin.advanceClock(study: b.study.studyID, seconds: 60)
            #expect(frozen.mode == "frozen")
            #expect(try await trio.admin.clock(study: a.study.studyID).now == "2026-05-04T14:59:00Z")
        }
    }
}

/// Relative schedules and the study's intervention list.
@Suite(.timeLimit(.minutes(2))) struct InterventionTests {
    @Test func relativeSchedulesFollowInterventionDates() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "I", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago), interventions: ["surgery"]))
            #expect(study.interventions == ["surgery"])
            var survey = moodSurvey
            survey.schedules = [.relative(daysAfter: 2, time: LocalTime(hour: 10, minute: 0), anchor: .intervention("surgery"))]
            // Unknown interventions are refused, in surveys and in participant dates; nothing is stored.
            var bad = survey
            bad.schedules = [.relative(daysAfter: 2, time: LocalTime(hour: 10, minute: 0), anchor: .intervention("visit"))]
            await #expect(throws: APIFailure.self) { _ = try await trio.admin.createSurvey(study: study.studyID, bad) }
            let surveyID = try await trio.admin.createSurvey(study: study.studyID, survey)
            let credentials = try await trio.admin.createParticipants(study: study.studyID)[0]
            do {
                try await trio.admin.addIntervention(patient: credentials.patientID, .init(name: "visit", date: "2026-05-05"))
                Issue.record("an unknown intervention was accepted")
            } catch let failure as APIFailure {
                #expect(failure.status == 400)
                #expect(failure.code == "unknown_intervention")
            }
            let client = try SurveyClient(configuration: clientConfiguration(trio, credentials))
            try await client.start()
            // No intervention date yet: nothing scheduled.
            #expect(try await trio.admin.occurrences(study: study.studyID).isEmpty)
            try await trio.admin.addIntervention(patient: credentials.patientID, .init(name: "surgery", date: "2026-05-04"))
            let pending = try await trio.admin.occurrences(study: study.studyID)
            #expect(pending.map(\.localTime) == ["2026-05-06T10:00"])
            #expect(pending.map(\.surveyID) == [surveyID])
            let fired = try await trio.admin.advanceClock(study: study.studyID, seconds: 3 * 86400)
            #expect(fired.fired.map(\.status) == ["sent"])
            await client.close()
        }
    }
}
}
