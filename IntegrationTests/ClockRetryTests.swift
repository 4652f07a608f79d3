import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// A clock move walks the moments a push's back-off ends, as it walks due moments (issue 35): the pushes a test sees
/// through a relay outage do not depend on how it moved the clock. One move through five hours made 2 attempts where
/// five hours of one-minute moves made 9.
@Suite(.timeLimit(.minutes(3))) struct ClockRetryTests {
    /// A server-scheduled study frozen before its 09:00 survey, one participant registered with a real relay token.
    static func study(_ trio: Trio, name: String) async throws -> (study: String, patient: String) {
        let study = try await trio.admin.createStudy(.init(name: name, timezone: "America/Chicago", scheduling: "server",
                                                           clock: .init(frozenAt: mondayBeforeNineChicago)))
        let who = try await trio.admin.createParticipants(study: study.studyID)[0]
        _ = try await trio.admin.createSurvey(study: study.studyID, moodSurvey)
        let token = try await trio.control.registerDevice(platform: "android")
        let registered = try await mobilePost(trio, "/register_user", patientID: who.patientID, password: who.password, extra: [
            ("new_password", who.password), ("phone_number", "1"), ("fcm_token", token), ("timezone", "America/Chicago")])
        #expect(registered.status == 200)
        return (study.studyID, who.patientID)
    }

    @Test func retriesThroughAnOutageDoNotDependOnTheStepSize() async throws {
        try await Trio.with { trio in
            let once = try await Self.study(trio, name: "one move")
            let steps = try await Self.study(trio, name: "one-minute moves")
            // The relay's provider API is down for the whole test (real time).
            try await trio.control.setFaults(.init(outage: .init(status: 503, seconds: 600)))
            let span = 5 * 3600
            _ = try await trio.admin.advanceClock(study: once.study, seconds: span)
            for _ in 0..<(span / 60) { _ = try await trio.admin.advanceClock(study: steps.study, seconds: 60) }
            let a = try await trio.admin.pushes(study: once.study)
            let b = try await trio.admin.pushes(study: steps.study)
            // 09:00 and then each back-off (60 s doubling, at most an hour) ending within the five hours.
            #expect(a.count >= 8, "\(a.map(\.dueAt))")
            #expect(a.allSatisfy { $0.status == "relay_error" || $0.status == "expired" })
            #expect(a.count == b.count, "one move: \(a.count) attempts, one-minute moves: \(b.count)")
            // The same moments, on the study's clock.
            let times = { (log: [AdminWire.PushLogEntry]) in log.map { [$0.status, $0.dueAt] } }
            #expect(times(a) == times(b))
            try await trio.control.setFaults(.init())
        }
    }
}
}
