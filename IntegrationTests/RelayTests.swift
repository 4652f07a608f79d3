import ClientSDK
import Foundation
import Scheduling
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The push relay's APNs behaviour and store-and-forward rules, through real processes.
@Suite(.timeLimit(.minutes(2))) struct RelayTests {
    @Test func offlineIOSDeviceReceivesOnlyTheNewestOfTwoPushes() async throws {
        try await Trio.with { trio in
            // Two surveys due at 09:00 and 10:00 while the iOS device is offline.
            let setup = try await StudySetup.make(trio)
            let secondID = try await trio.admin.createSurvey(study: setup.study.studyID, tenOClockSurvey)
            let storage = temporaryDirectory()
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, platform: .ios, storage: storage))
            try await client.start()
            let token = try #require(await client.pushToken)
            await client.close()
            #expect(try await eventually { try await trio.control.device(token).connected == false })

            let fired = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 2 * 3600)
            #expect(fired.fired.map(\.status) == ["sent", "sent"])
            #expect(fired.fired.map(\.surveyIDs) == [[setup.surveyID], [secondID]])
            let device = try await trio.control.device(token)
            #expect(device.pending.count == 1)
            let trace = try await trio.control.trace(token: token)
            #expect(trace.filter { $0["event"]?.stringValue == "dropped" }.count == 1)

            // Reconnecting delivers only the newest.
            let again = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, platform: .ios, storage: storage))
            let recorder = EventRecorder(again)
            try await again.start()
            let (surveys, _) = try await recorder.wait { if case .pushReceived(_, let ids, _) = $0 { ids } else { nil } }
            #expect(surveys == [secondID])
            _ = try await recorder.survey()
            try await Task.sleep(for: .milliseconds(200))
            #expect(await again.pendingSurveys().map(\.surveyID) == [secondID])
            #expect(try await trio.control.device(token).pending.isEmpty)
            await again.close()
        }
    }

    @Test func unackedMessagesAreSentAgainOnReconnect() async throws {
        try await Trio.with { trio in
            let token = try await trio.control.registerDevice(platform: "android")
            let url = trio.relay.url + "/v1/devices/\(token)/stream"
            let fcm = try TransportRequest.json(trio.relay.url + "/v1/projects/p/messages:send",
                                           body: RelayWire.FCMSendRequest(message: .init(token: token, data: ["k": "v"])))
            let first = try await trio.http.eventStream(TransportRequest(url: url))
            #expect(try await trio.http.send(fcm).status == 200)
            var ids: [String] = []
            for try await item in first.items {
                if case .event(let e) = item, e.event == "push" { ids.append(e.id ?? ""); break }
            }
            // Not acked: the next connection gets it again; after an ack, never again.
            let second = try await trio.http.eventStream(TransportRequest(url: url))
            for try await item in second.items {
                if case .event(let e) = item, e.event == "push" { ids.append(e.id ?? ""); break }
            }
            #expect(ids.count == 2 && ids[0] == ids[1])
            let ack = try TransportRequest.json(trio.relay.url + "/v1/devices/\(token)/ack", body: RelayWire.AckRequest(ids: [ids[0]]))
            #expect(try await trio.http.send(ack).status == 204)
            #expect(try await trio.control.device(token).pending.isEmpty)
            #expect(try await trio.control.device(token).acked == 1)
        }
    }

    @Test func androidOverflowAndCollapseKeys() async throws {
        try await Trio.with { trio in
            let token = try await trio.control.registerDevice(platform: "android")
            func send(_ n: Int, collapse: String? = nil) async throws -> Int {
                let body = RelayWire.FCMSendRequest(message: .init(token: token, data: ["n": String(n)], android: .init(collapseKey: collapse)))
                return try await trio.http.send(.json(trio.relay.url + "/v1/projects/p/messages:send", body: body)).status
            }
            #expect(try await send(0, collapse: "c") == 200)
            #expect(try await send(1, collapse: "c") == 200)
            #expect(try await trio.control.device(token).pending.map { $0.payload["n"] } == ["1"])
            for n in 2...100 { _ = try await send(n) }
            #expect(try await trio.control.device(token).pending.count == 100)
            #expect(try await send(101) == 200)
            #expect(try await trio.control.device(token).pending.isEmpty)
            let stream = try await trio.http.eventStream(TransportRequest(url: trio.relay.url + "/v1/devices/\(token)/stream"))
            for try await item in stream.items {
                if case .event(let e) = item { #expect(e.event == "deleted_messages"); break }
            }
        }
    }

    @Test func apnsErrorsFollowApple() async throws {
        try await Trio.with { trio in
            let token = try await trio.control.registerDevice(platform: "ios")
            let alert: JSONValue = ["aps": ["alert": "hi"]]
            func reason(_ r: TransportResponse) -> String? { (try? r.decode(RelayWire.APNsError.self))?.reason }

            let ok = try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-id", "123e4567-e89b-12d3-a456-426614174000")])
            #expect(ok.status == 200)
            #expect(ok.header("apns-id") == "123e4567-e89b-12d3-a456-426614174000")
            #expect(reason(try await trio.control.sendAPNs(token: "abc", payload: alert)) == "BadDeviceToken")
            #expect(reason(try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-priority", "7")])) == "BadPriority")
            #expect(reason(try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-expiration", "soon")])) == "BadExpirationDate")
            #expect(reason(try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-expiration", "9223372036854775807")])) == "BadExpirationDate")
            #expect(reason(try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-id", "nope")])) == "BadMessageId")
            #expect(reason(try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-collapse-id", String(repeating: "c", count: 65))])) == "BadCollapseId")
            let big: JSONValue = ["aps": ["alert": .string(String(repeating: "x", count: 5000))]]
            let tooBig = try await trio.control.sendAPNs(token: token, payload: big)
            #expect(tooBig.status == 413)
            #expect(reason(tooBig) == "PayloadTooLarge")
            let empty = try await trio.http.send(TransportRequest(method: "POST", url: trio.relay.url + "/3/device/\(token)"))
            #expect(reason(empty) == "PayloadEmpty")

            // Expiration 0 to an offline device: never stored.
            let nowOrNever = try await trio.control.sendAPNs(token: token, payload: alert, headers: [("apns-expiration", "0")])
            #expect(nowOrNever.status == 200)
            #expect(try await trio.control.device(token).pending.count == 1)  // still the first, accepted push

            // Rotation: the old token answers 410 with a timestamp from then on.
            let rotated = try await trio.http.send(TransportRequest(method: "POST", url: trio.relay.url + "/v1/devices/\(token)/rotate"))
            let fresh = try rotated.decode(RelayWire.TokenResponse.self).token
            #expect(fresh != token)
            let gone = try await trio.control.sendAPNs(token: token, payload: alert)
            #expect(gone.status == 410)
            #expect(reason(gone) == "Unregistered")
            #expect((try? gone.decode(RelayWire.APNsError.self))?.timestamp != nil)
            #expect(try await trio.control.sendAPNs(token: fresh, payload: alert).status == 200)
            #expect(try await trio.http.send(TransportRequest(method: "DELETE", url: trio.relay.url + "/v1/devices/\(fresh)")).status == 204)
            #expect(try await trio.control.sendAPNs(token: fresh, payload: alert).status == 410)
        }
    }
}
}
