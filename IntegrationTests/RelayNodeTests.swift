import ClientSDK
import Foundation
import SurveyCrypto
import SurveyWire
import Testing
import Transport
import TrioLoad
import TrioTesting

extension Integration {
/// Several relays as one deployment without shared state: tokens carry their relay's node id and the mock server
/// routes each push by it.
@Suite(.timeLimit(.minutes(2))) struct RelayNodeTests {
    @Test func eachPushGoesToTheRelayThatIssuedItsToken() async throws {
        var options = Trio.Options()
        options.relayCount = 3
        try await Trio.with(options) { trio in
            let info = try await trio.admin.info()
            #expect(info.relayURLs == trio.relays.map(\.url))
            let study = try await trio.admin.createStudy(.init(name: "Nodes", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago)))
            _ = try await trio.admin.createSurvey(study: study.studyID, moodSurvey)
            let people = try await trio.admin.createParticipants(study: study.studyID, .init(count: 3))
            // Participant i registers with a token from relay i (node id i), iOS and Android alike.
            for (i, who) in people.enumerated() {
                let relay = RelayControlClient(baseURL: trio.relays[i].url, http: trio.http)
                let platform = i == 1 ? "ios" : "android"
                let token = try await relay.registerDevice(platform: platform)
                #expect(RelayNode.node(of: token) == i)
                let response = try await mobilePost(trio, i == 1 ? "/register_user/ios" : "/register_user", patientID: who.patientID,
                                                    password: who.password,
                                                    extra: [("new_password", "n"), ("phone_number", "1"), ("fcm_token", token), ("timezone", "America/Chicago")])
                #expect(response.status == 200)
            }
            let fired = try await trio.admin.advanceClock(study: study.studyID, seconds: 120).fired
            #expect(fired.map(\.status) == ["sent", "sent", "sent"])
            // Every relay accepted exactly its own participant's push.
            for relay in trio.relays {
                let metrics = try await trio.http.send(TransportRequest(url: relay.url + "/metrics")).text
                #expect(metrics.contains("relay_messages_total{event=\"accepted\"} 1"), "\(relay.url) accepted one push")
            }
        }
    }

    @Test func aRestartedNodeKeepsItsIdAndItsDevices() async throws {
        let dir = temporaryDirectory("relay-node")
        let store = dir.appendingPathComponent("relay.sqlite").path
        func launch() async throws -> ServerProcess {
            try await ServerProcess.launch(executable: try Executables.locate("push-relay"),
                                           arguments: ["--port", "0", "--node-id", "7", "--store", store, "--parent-pid", String(getpid())],
                                           logFile: dir.appendingPathComponent("relay.log"))
        }
        let http = TransportClient()
        defer { http.shutdown() }
        var relay = try await launch()
        let token = try await RelayControlClient(baseURL: relay.url, http: http).registerDevice(platform: "android")
        #expect(RelayNode.node(of: token) == 7)
        await relay.stop()
        relay = try await launch()
        let health = try await http.send(TransportRequest(url: relay.url + "/__control/health")).decode(JSONValue.self)
        #expect(health["node_id"]?.stringValue == "7")
        #expect(try await RelayControlClient(baseURL: relay.url, http: http).device(token).token == token)
        await relay.stop()
    }

    @Test func loadPushSpreadsDevicesOverTheRelays() async throws {
        var options = Trio.Options()
        options.relayCount = 2
        try await Trio.with(options) { trio in
            let push = PushLoadOptions(relay: trio.relays[0].url, devices: 20, rate: RateSchedule(constant: 100), duration: .seconds(1),
                                       grace: .seconds(3), moreRelays: [trio.relays[1].url])
            let report = try await PushLoad.run(push, http: trio.http) { _ in }
            #expect(report.correct == true && report.totals.failed == 0 && report.totals.succeeded == report.totals.started)
            // Both relays carried pushes.
            for relay in trio.relays {
                let metrics = try await trio.http.send(TransportRequest(url: relay.url + "/metrics")).text
                let accepted = metrics.split(separator: "\n").first { $0.hasPrefix("relay_messages_total{event=\"accepted\"} ") }
                    .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
                #expect(accepted >= Double(report.totals.started) / 4, "\(relay.url) accepted \(accepted)")
            }
        }
    }
}
}
