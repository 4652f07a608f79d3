import ClientSDK
import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Sequence where Element: Sendable {
    /// Maps in order, awaiting each element before the next.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}

extension Integration {
/// Seeded relay faults (PROTOCOL.md §5 `PUT /__control/faults`) and provider limits, through real processes: what a raw device link sees,
/// and what an app using the SDK sees.
@Suite(.timeLimit(.minutes(2))) struct RelayFaultTests {
    /// An Android device on a raw stream: its token, the stream, and a sender of numbered FCM pushes.
    struct RawDevice {
        let token: String
        let items: EventItems
        let trio: Trio

        static func connect(_ trio: Trio) async throws -> RawDevice {
            let token = try await trio.control.registerDevice(platform: "android")
            let stream = try await trio.http.eventStream(TransportRequest(url: trio.relay.url + "/v1/devices/\(token)/stream"))
            #expect(stream.status == 200)
            return RawDevice(token: token, items: stream.items, trio: trio)
        }

        func send(_ n: Int) async throws -> TransportResponse {
            let body = RelayWire.FCMSendRequest(message: .init(token: token, data: ["n": String(n)]))
            return try await trio.http.send(.json(trio.relay.url + "/v1/projects/p/messages:send", body: body))
        }

        /// The `n` of every push that arrives within `window`, in arrival order, with arrival times.
        func collect(for window: Duration) async -> [(n: Int, at: ContinuousClock.Instant)] {
            let items = self.items
            let task = Task { () -> [(n: Int, at: ContinuousClock.Instant)] in
                var got: [(n: Int, at: ContinuousClock.Instant)] = []
                do {
                    for try await item in items {
                        guard case .event(let e) = item, e.event == "push",
                              let message = try? WireJSON.decode(RelayWire.Message.self, from: e.data),
                              let n = message.payload["n"]?.stringValue.flatMap({ Int($0) }) else { continue }
                        got.append((n, .now))
                    }
                } catch {}
                return got
            }
            try? await Task.sleep(for: window)
            task.cancel()
            return await task.value
        }
    }

    /// The pushes (of 40) a drop rate of 0.5 with this seed loses, on a fresh relay state.
    func droppedUnderSeed(_ trio: Trio, seed: UInt64) async throws -> Set<Int> {
        try await trio.control.reset()
        let device = try await RawDevice.connect(trio)
        try await trio.control.setFaults(.init(seed: seed, dropRate: 0.5))
        for n in 0..<40 { #expect(try await device.send(n).status == 200) }
        let got = Set(await device.collect(for: .milliseconds(500)).map(\.n))
        let trace = try await trio.control.trace(token: device.token)
        let traced = trace.filter { $0["event"]?.stringValue == "dropped" && $0["detail"]?.stringValue == "fault: drop" }.count
        #expect(traced == 40 - got.count)
        return Set(0..<40).subtracting(got)
    }

    @Test func dropIsSeededAndReproducible() async throws {
        try await Trio.with { trio in
            let first = try await droppedUnderSeed(trio, seed: 42)
            let again = try await droppedUnderSeed(trio, seed: 42)
            let other = try await droppedUnderSeed(trio, seed: 7)
            #expect(first.count > 5 && first.count < 35)
            #expect(first == again)
            #expect(first != other)
            let metrics = try await trio.http.send(TransportRequest(url: trio.relay.url + "/metrics")).text
            #expect(metrics.contains("relay_faults_total{kind=\"drop\"}"))
            #expect(metrics.contains("relay_messages_total{event=\"delivered\"}"))
        }
    }

    @Test func duplicateDelayAndReorder() async throws {
        try await Trio.with { trio in
            let device = try await RawDevice.connect(trio)
            try await trio.control.setFaults(.init(seed: 1, duplicateRate: 1))
            for n in 0..<3 { _ = try await device.send(n) }
            #expect(await device.collect(for: .milliseconds(300)).map(\.n) == [0, 0, 1, 1, 2, 2])
            // The relay's trace shows each copy (issue 50): two deliveries a message, the second naming the fault.
            let delivered = try await trio.control.trace(token: device.token, event: "delivered")
            #expect(delivered.count == 6, "\(delivered)")
            #expect(delivered.filter { $0["detail"]?.stringValue == "a second copy (fault: duplicate)" }.count == 3)

            let delayed = try await RawDevice.connect(trio)
            try await trio.control.setFaults(.init(seed: 1, delayMs: .init(min: 250, max: 300)))
            let sent = ContinuousClock.now
            _ = try await delayed.send(9)
            let arrivals = await delayed.collect(for: .milliseconds(600))
            #expect(arrivals.map(\.n) == [9])
            #expect(try #require(arrivals.first).at - sent >= .milliseconds(250))

            let shuffled = try await RawDevice.connect(trio)
            try await trio.control.setFaults(.init(seed: 3, reorderWindow: 8))
            for n in 0..<8 { _ = try await shuffled.send(n) }
            let order = await shuffled.collect(for: .milliseconds(400)).map(\.n)
            #expect(order.sorted() == Array(0..<8))
            #expect(order != Array(0..<8))
        }
    }

    @Test func outageAnswersBothProviderAPIsThenRecovers() async throws {
        try await Trio.with { trio in
            let android = try await trio.control.registerDevice(platform: "android")
            let ios = try await trio.control.registerDevice(platform: "ios")
            func fcm() async throws -> TransportResponse {
                try await trio.http.send(.json(trio.relay.url + "/v1/projects/p/messages:send",
                                               body: RelayWire.FCMSendRequest(message: .init(token: android, data: ["k": "v"]))))
            }
            try await trio.control.setFaults(.init(outage: .init(status: 503, seconds: 0.6)))
            let down = try await fcm()
            #expect(down.status == 503)
            #expect((try? down.decode(RelayWire.FCMError.self))?.error.details.first?.errorCode == "UNAVAILABLE")
            let apns = try await trio.control.sendAPNs(token: ios, payload: ["aps": ["alert": "x"]])
            #expect(apns.status == 503)
            #expect((try? apns.decode(RelayWire.APNsError.self))?.reason == "ServiceUnavailable")
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await fcm().status == 200)

            try await trio.control.setFaults(.init(outage: .init(status: 429, seconds: 5)))
            let limited = try await fcm()
            #expect(limited.status == 429)
            #expect((try? limited.decode(RelayWire.FCMError.self))?.error.details.first?.errorCode == "QUOTA_EXCEEDED")
            #expect((try? await trio.control.sendAPNs(token: ios, payload: ["aps": [:]]).decode(RelayWire.APNsError.self))?.reason == "TooManyRequests")
            try await trio.control.setFaults(.init())
            #expect(try await fcm().status == 200)
        }
    }

    @Test func zombieTokenAcceptsAndNeverDeliversOnlyForItsDevice() async throws {
        try await Trio.with { trio in
            let zombie = try await RawDevice.connect(trio)
            let healthy = try await RawDevice.connect(trio)
            try await trio.control.setFaults(.init(token: zombie.token, zombie: true))
            #expect(try await zombie.send(1).status == 200)
            #expect(try await healthy.send(2).status == 200)
            #expect(await zombie.collect(for: .milliseconds(300)).isEmpty)
            #expect(await healthy.collect(for: .milliseconds(300)).map(\.n) == [2])
            #expect(try await trio.control.device(zombie.token).pending.isEmpty)
            let trace = try await trio.control.trace(token: zombie.token)
            #expect(trace.contains { $0["detail"]?.stringValue == "fault: zombie" })
        }
    }

    @Test func badFaultBodiesAreRejected() async throws {
        try await Trio.with { trio async throws in
            func put(_ json: String) async throws -> (Int, String?) {
                let response = try await trio.http.send(TransportRequest(method: "PUT", url: trio.relay.url + "/__control/faults",
                                                                    headers: [("Content-Type", "application/json")], body: Array(json.utf8)))
                return (response.status, errorCode(response))
            }
            #expect(try await put("{\"drop_rate\": 2}") == (400, "invalid_field"))
            #expect(try await put("{\"delay_ms\": {\"min\": 5, \"max\": 1}}") == (400, "invalid_field"))
            #expect(try await put("{\"outage\": {\"status\": 200, \"seconds\": 1}}") == (400, "invalid_field"))
            #expect(try await put("{\"trigger\": true}") == (400, "unknown_field"))
            #expect(try await put("[1]") == (400, "invalid_json"))
            #expect(try await put("{\"token\": \"nope\", \"zombie\": true}") == (404, "unknown_token"))
            #expect(try await put("{}") == (204, nil))
        }
    }

    /// A connection that goes silent without a FIN (blackhole) is noticed by the SDK's dead-stream timer (2.5 keepalive
    /// periods), replaced, and the survey pushed meanwhile surfaces exactly once.
    @Test func sdkDetectsABlackholedStreamAndGetsThePushOnce() async throws {
        try await Trio.with(.init(keepaliveSeconds: 0.2)) { trio in
            let setup = try await StudySetup.make(trio)
            var configuration = clientConfiguration(trio, setup.credentials, storage: temporaryDirectory())
            configuration.relayKeepalive = .milliseconds(200)
            let client = try SurveyClient(configuration: configuration)
            let recorder = EventRecorder(client)
            try await client.start()
            let token = try #require(await client.pushToken)
            #expect(try await eventually { try await trio.control.device(token).connected })
            try await trio.control.setFaults(.init(token: token, blackhole: true))
            // Pushed into the black hole: written nowhere, kept unacked, sent again on the next stream.
            let fired = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            #expect(fired.fired.map(\.status) == ["sent"])
            let (reason, _) = try await recorder.wait { if case .streamReconnecting(let r) = $0 { r } else { nil } }
            #expect(reason == "dead")
            let (survey, _) = try await recorder.survey()
            #expect(survey.surveyID == setup.surveyID)
            try await Task.sleep(for: .milliseconds(300))
            let surfaced = await recorder.events.filter { if case .surveyAvailable = $0 { true } else { false } }
            #expect(surfaced.count == 1)
            #expect(try await trio.control.device(token).pending.isEmpty)
            await client.close()
        }
    }

    /// Every stream closed at once while pushes are duplicated and reordered: each device reconnects (jittered) and
    /// its app sees the survey exactly once.
    @Test func reconnectStormWithDuplicatesSurfacesEachSurveyOnce() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "storm", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago)))
            let surveyID = try await trio.admin.createSurvey(study: study.studyID, moodSurvey)
            let people = try await trio.admin.createParticipants(study: study.studyID, .init(count: 4))
            var clients: [(SurveyClient, EventRecorder)] = []
            for who in people {
                let client = try SurveyClient(configuration: clientConfiguration(trio, who, storage: temporaryDirectory()))
                let recorder = EventRecorder(client)
                try await client.start()
                clients.append((client, recorder))
            }
            for (client, _) in clients {
                let token = try #require(await client.pushToken)
                #expect(try await eventually { try await trio.control.device(token).connected })
            }
            try await trio.control.setFaults(.init(seed: 11, duplicateRate: 1, reorderWindow: 3))
            try await trio.control.setFaults(.init(closeAll: true))
            let fired = try await trio.admin.advanceClock(study: study.studyID, seconds: 120)
            #expect(fired.fired.count == people.count)
            for (client, recorder) in clients {
                let (survey, _) = try await recorder.survey()
                #expect(survey.surveyID == surveyID)
                try await Task.sleep(for: .milliseconds(200))
                let surfaced = await recorder.events.filter { if case .surveyAvailable = $0 { true } else { false } }
                #expect(surfaced.count == 1)
                #expect(await client.pendingSurveys().count == 1)
                await client.close()
            }
        }
    }

    @Test func perDeviceRateLimitAnswers429OnBothAPIs() async throws {
        try await Trio.with(.init(relayArguments: ["--device-rate", "2"])) { trio in
            let android = try await RawDevice.connect(trio)
            let other = try await RawDevice.connect(trio)
            let statuses = try await (0..<4).asyncMap { n in try await android.send(n).status }
            #expect(statuses == [200, 200, 429, 429])
            let limited = try await android.send(5)
            #expect((try? limited.decode(RelayWire.FCMError.self))?.error.details.first?.errorCode == "QUOTA_EXCEEDED")
            #expect(try await other.send(1).status == 200)
            let ios = try await trio.control.registerDevice(platform: "ios")
            let apns = try await (0..<3).asyncMap { _ in try await trio.control.sendAPNs(token: ios, payload: ["aps": ["alert": "x"]]) }
            #expect(apns.map(\.status) == [200, 200, 429])
            #expect((try? apns[2].decode(RelayWire.APNsError.self))?.reason == "TooManyRequests")
            // The bucket refills at the rate.
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await android.send(6).status == 200)
        }
    }

    @Test func voipPayloadsMayBeLargerAndLateUnregisteredReports() async throws {
        try await Trio.with(.init(relayArguments: ["--unregistered-lag", "0.5"])) { trio in
            let ios = try await trio.control.registerDevice(platform: "ios")
            let big: JSONValue = ["aps": [:], "blob": .string(String(repeating: "x", count: 4500))]
            #expect(try await trio.control.sendAPNs(token: ios, payload: big, headers: [("apns-push-type", "alert")]).status == 413)
            #expect(try await trio.control.sendAPNs(token: ios, payload: big, headers: [("apns-push-type", "voip")]).status == 200)
            // Uninstalled: accepted (and dropped) for the lag, then 410 with the uninstall time.
            let deleted = try await trio.http.send(TransportRequest(method: "DELETE", url: trio.relay.url + "/v1/devices/\(ios)"))
            #expect(deleted.status == 204)
            #expect(try await trio.control.sendAPNs(token: ios, payload: ["aps": ["alert": "x"]]).status == 200)
            try await Task.sleep(for: .milliseconds(600))
            let gone = try await trio.control.sendAPNs(token: ios, payload: ["aps": ["alert": "x"]])
            #expect(gone.status == 410)
            #expect((try? gone.decode(RelayWire.APNsError.self))?.timestamp != nil)
            let trace = try await trio.control.trace(token: ios)
            #expect(trace.contains { $0["detail"]?.stringValue == "token unregistered (not reported yet)" })
        }
    }

    @Test func backlogIsRedeliveredInAckGatedBatches() async throws {
        try await Trio.with(.init(relayArguments: ["--ack-batch", "3"])) { trio in
            let token = try await trio.control.registerDevice(platform: "android")
            for n in 0..<7 {
                let body = RelayWire.FCMSendRequest(message: .init(token: token, data: ["n": String(n)]))
                #expect(try await trio.http.send(.json(trio.relay.url + "/v1/projects/p/messages:send", body: body)).status == 200)
            }
            let stream = try await trio.http.eventStream(TransportRequest(url: trio.relay.url + "/v1/devices/\(token)/stream"))
            var received: [Int] = []
            var iterator = stream.items.makeAsyncIterator()
            func next() async throws -> (String, Int) {
                while let item = try await iterator.next() {
                    if case .event(let e) = item, e.event == "push",
                       let m = try? WireJSON.decode(RelayWire.Message.self, from: e.data), let n = m.payload["n"]?.stringValue.flatMap({ Int($0) }) {
                        return (m.id, n)
                    }
                }
                throw CancellationError()
            }
            var ids: [String] = []
            for _ in 0..<3 {
                let (id, n) = try await next()
                ids.append(id)
                received.append(n)
            }
            #expect(received == [0, 1, 2])
            // Nothing more until an ack frees slots.
            #expect(try await trio.control.device(token).pending.count == 7)
            let trace = try await trio.control.trace(token: token)
            #expect(trace.filter { $0["event"]?.stringValue == "delivered" }.count == 3)
            let ack = try TransportRequest.json(trio.relay.url + "/v1/devices/\(token)/ack", body: RelayWire.AckRequest(ids: ids))
            #expect(try await trio.http.send(ack).status == 204)
            for _ in 0..<3 { received.append(try await next().1) }
            #expect(received == [0, 1, 2, 3, 4, 5])
        }
    }

    /// `--store`: devices, pending pushes and retired tokens survive a kill -9 of the relay.
    @Test func storedRelayLosesNothingWhenKilled() async throws {
        let directory = temporaryDirectory("relay-store")
        let path = directory.appendingPathComponent("relay.sqlite").path
        func launch() async throws -> ServerProcess {
            try await ServerProcess.launch(executable: Executables.url("push-relay"),
                                           arguments: ["--port", "0", "--store", path, "--parent-pid", String(getpid())],
                                           logFile: directory.appendingPathComponent("relay.log"))
        }
        let http = TransportClient()
        defer { http.shutdown() }
        let first = try await launch()
        let control = RelayControlClient(baseURL: first.url, http: http)
        let offline = try await control.registerDevice(platform: "android")
        let rotated = try await control.registerDevice(platform: "android")
        for n in 0..<3 {
            let body = RelayWire.FCMSendRequest(message: .init(token: offline, data: ["n": String(n)]))
            #expect(try await http.send(.json(first.url + "/v1/projects/p/messages:send", body: body)).status == 200)
        }
        let fresh = try await http.send(TransportRequest(method: "POST", url: first.url + "/v1/devices/\(rotated)/rotate")).decode(RelayWire.TokenResponse.self).token
        kill(first.pid, SIGKILL)
        _ = await first.stop(grace: .seconds(1))

        let second = try await launch()
        let again = RelayControlClient(baseURL: second.url, http: http)
        let view = try await again.device(offline)
        #expect(view.pending.map { $0.payload["n"]?.stringValue } == ["0", "1", "2"])
        #expect(view.connected == false)
        #expect(try await again.device(fresh).platform == "android")
        let old = try await http.send(.json(second.url + "/v1/projects/p/messages:send",
                                            body: RelayWire.FCMSendRequest(message: .init(token: rotated, data: ["k": "v"]))))
        #expect(old.status == 404)
        // The device connects to the new process and gets its pushes, oldest first.
        let stream = try await http.eventStream(TransportRequest(url: second.url + "/v1/devices/\(offline)/stream"))
        var got: [String] = []
        for try await item in stream.items {
            if case .event(let e) = item, e.event == "push", let m = try? WireJSON.decode(RelayWire.Message.self, from: e.data) {
                got.append(m.payload["n"]?.stringValue ?? "")
                if got.count == 3 { break }
            }
        }
        #expect(got == ["0", "1", "2"])
        _ = await second.stop()
    }

    /// An uninstalled (or rotated) token: the SDK's stream gets 410, it takes a new token, tells the server with
    /// `/set_fcm_token`, and the next survey push reaches it. It also sends Beiwe's heartbeat while running.
    @Test func sdkRenewsAnUnregisteredTokenAndKeepsItsHeartbeat() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            var configuration = clientConfiguration(trio, setup.credentials, storage: temporaryDirectory())
            configuration.heartbeatInterval = .milliseconds(200)
            let client = try SurveyClient(configuration: configuration)
            let recorder = EventRecorder(client)
            try await client.start()
            let old = try #require(await client.pushToken)
            #expect(try await trio.http.send(TransportRequest(method: "DELETE", url: trio.relay.url + "/v1/devices/\(old)")).status == 204)
            let (code, _) = try await recorder.wait { if case .error(let e) = $0 { e.code } else { nil } }
            #expect(code == "token_unregistered")
            #expect(try await eventually(.seconds(10)) {
                let current = await client.pushToken
                guard let current, current != old else { return false }
                return try await trio.admin.participant(setup.credentials.patientID).pushToken == current
            })
            let fresh = try #require(await client.pushToken)
            #expect(try await eventually { try await trio.control.device(fresh).connected })
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            let (survey, _) = try await recorder.survey()
            #expect(survey.surveyID == setup.surveyID)
            func heartbeats() async throws -> Int {
                let metrics = try await trio.http.send(TransportRequest(url: trio.server.url + "/metrics")).text
                return metrics.split(separator: "\n").filter { $0.contains("route=\"/mobile-heartbeat\"") && !$0.hasPrefix("#") }
                    .compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
            }
            // One at start, then one every 200 ms.
            #expect(try await eventually(.seconds(5)) { try await heartbeats() >= 3 })
            await client.close()
        }
    }
}
}
