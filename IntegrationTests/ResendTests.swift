import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// Beiwe's resend of unconfirmed survey pushes (issue 50, PROTOCOL.md §9): a study echoed `resend_period_minutes` and
/// never resent, so a push the relay dropped was lost for good. Now an iOS app from 2024.27 whose receipt is not
/// reported gets the push again every period, on Beiwe's 6-minute grid, walked by clock moves; Android and older iOS
/// apps never do; a confirmed receipt ends it.
@Suite(.timeLimit(.minutes(3))) struct ResendTests {
    /// A participant registered as an app of `os`/`version` with a relay token, in `study`.
    static func participant(_ trio: Trio, study: String, ios: Bool, version: String) async throws -> AdminWire.Credentials {
        let who = try await trio.admin.createParticipants(study: study)[0]
        let token = try await trio.control.registerDevice(platform: ios ? "ios" : "android")
        let registered = try await mobilePost(trio, ios ? "/register_user/ios" : "/register_user", patientID: who.patientID,
                                              password: who.password, extra: [
            ("new_password", who.password), ("phone_number", "1"), ("fcm_token", token), ("timezone", "America/Chicago"),
            ("version_name", version), ("version_code", "1")])
        #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
        return who
    }

    @Test func unconfirmedPushesToNewIOSAppsAreResentEveryPeriodUntilConfirmed() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "resend", timezone: "America/Chicago", scheduling: "server",
                                                               deviceSettings: ["resend_period_minutes": 60],
                                                               clock: .init(frozenAt: mondayBeforeNineChicago)))
            _ = try await trio.admin.createSurvey(study: study.studyID, moodSurvey)
            let app = try await Self.participant(trio, study: study.studyID, ios: true, version: "2024.30")
            let eligible = app.patientID
            let older = try await Self.participant(trio, study: study.studyID, ios: true, version: "2024.26").patientID
            let android = try await Self.participant(trio, study: study.studyID, ios: false, version: "2025.1").patientID
            // 09:00 local is due a minute on: every participant's push goes out.
            _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 60)
            let first = try await trio.admin.pushes(study: study.studyID)
            #expect(first.count == 3 && first.allSatisfy { $0.status == "sent" && $0.resend == false }, "\(first)")
            // Three hours on, in one move: the eligible app's push again at 10:00, 11:00 and 12:00 (sent 09:00, on the
            // 6-minute grid, 60 minutes apart), each marked a resend; nobody else's.
            _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 3 * 3600)
            let resent = try await trio.admin.pushes(study: study.studyID, patient: eligible).filter { $0.resend == true }
            #expect(resent.count == 3, "\(resent.map(\.sentAt))")
            #expect(resent.compactMap(\.sentAt) == ["2026-05-04T15:00:00Z", "2026-05-04T16:00:00Z", "2026-05-04T17:00:00Z"])
            #expect(resent.allSatisfy { $0.scheduleUUIDs == first.first { $0.patientID == eligible }?.scheduleUUIDs })
            for other in [older, android] {
                #expect(try await trio.admin.pushes(study: study.studyID, patient: other).count == 1, "\(other) got resends")
            }
            // The app reports the push's occurrences received: no more resends.
            let uuids = try #require(resent.last?.scheduleUUIDs)
            let confirmed = try await mobilePost(trio, "/confirm_notifications/ios", patientID: eligible, password: app.password, extra: [
                ("notification_uuids", String(decoding: try WireJSON.encode(uuids), as: UTF8.self))])
            #expect(confirmed.status == 204, "\(confirmed.status)")
            _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 3 * 3600)
            let after = try await trio.admin.pushes(study: study.studyID, patient: eligible).filter { $0.resend == true }
            #expect(after.count == 3, "resent after the receipt was reported: \(after.map(\.sentAt))")
        }
    }
}
}
