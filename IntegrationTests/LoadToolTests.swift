import Foundation
import SurveyWire
import Testing
import Transport
@testable import TrioLoad
import TrioTesting

extension Integration {
/// `survey-cli load` against the real trio: short, bounded runs.
@Suite(.timeLimit(.minutes(2))) struct LoadToolTests {
    @Test func openModelRunIsMeasuredAndCheckedAgainstTheServer() async throws {
        try await Trio.with { trio in
            let setup = try await LoadSetup.run(server: trio.server.url, participants: 40, scheduling: "device", perParticipantKeys: false, http: trio.http)
            #expect(setup.participants.count == 40)
            let options = RegisterLoadOptions(server: trio.server.url, relay: trio.relay.url, participants: setup.participants,
                                              studyID: setup.studyID, model: .open(RateSchedule(constant: 40), maxInFlight: 100),
                                              duration: .seconds(1), download: true)
            let report = try await RegisterLoad.run(options, http: trio.http) { _ in }
            #expect(report.totals.failed == 0)
            #expect(report.totals.succeeded >= 35 && report.totals.succeeded <= 41)
            #expect(report.correct == true)
            #expect(report.latencyMs.p50 > 0 && report.latencyMs.p50 <= report.latencyMs.p99)
            #expect(report.scenario == "register+relay_token+download_surveys")
            #expect(try await trio.admin.stats(setup.studyID!).registered == Set(setup.participants.prefix(report.totals.succeeded).map(\.patientID)).count)
            #expect(try Threshold(parsing: "errors<0.1%").passes(report))
            #expect(try !Threshold(parsing: "p50<1us").passes(report))
        }
    }

    @Test func wrongPasswordsAreCountedByStatusAndCode() async throws {
        try await Trio.with { trio in
            let setup = try await LoadSetup.run(server: trio.server.url, participants: 5, scheduling: "device", perParticipantKeys: false, http: trio.http)
            let wrong = setup.participants.map { AdminWire.Credentials(patientID: $0.patientID, password: "nope") }
            let options = RegisterLoadOptions(server: trio.server.url, participants: wrong, model: .closed(concurrency: 2), duration: .milliseconds(500))
            let report = try await RegisterLoad.run(options, http: trio.http) { _ in }
            #expect(report.totals.succeeded == 0)
            #expect(report.errors.keys.sorted() == ["register_user:403:invalid_credentials"])
            #expect(report.totals.errorRate == 1)
        }
    }

    @Test func rampAndThresholdParsing() throws {
        let ramp = try RateSchedule(parsing: "0:100/s,30s:2000/s")
        #expect(ramp.rate(at: 0) == 100)
        #expect(ramp.rate(at: 15) == 1050)
        #expect(ramp.rate(at: 60) == 2000)
        #expect(throws: LoadUsageError.self) { try RateSchedule(parsing: "10s:5/s,1s:6/s") }
        #expect(throws: LoadUsageError.self) { try RateSchedule(parsing: "fast") }
        #expect(throws: LoadUsageError.self) { try Threshold(parsing: "p99 25ms") }
        #expect(throws: LoadUsageError.self) { try Threshold(parsing: "latency<25ms") }
        #expect(try parseDuration("250ms", flag: "x") == .milliseconds(250))
        #expect(try parseDuration("2m", flag: "x") == .seconds(120))
    }

    @Test func cliExitCodesFollowThresholdsAndReachability() async throws {
        try await Trio.with { trio in
            func run(_ arguments: [String]) async throws -> Int32 { try await Self.surveyCLI(["load", "register"] + arguments) }
            let report = temporaryDirectory("load").appendingPathComponent("report.json")
            #expect(try await run(["--server", trio.server.url, "--setup", "10", "--rate", "20", "--duration", "500ms",
                             "--threshold", "errors<1%", "--report", report.path]) == 0)
            let written = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: report))
            #expect(written.schema == LoadReport.schemaVersion)
            #expect(written.thresholds == ["errors<1%": true])
            #expect(try await run(["--server", trio.server.url, "--setup", "10", "--rate", "20", "--duration", "500ms", "--threshold", "p50<1us"]) == 99)
            let file = temporaryDirectory("load").appendingPathComponent("p.json")
            try WireJSON.encode(LoadSetup.Result(server: "x", studyID: "0", participants: [.init(patientID: "a", password: "b")])).write(to: file)
            #expect(try await run(["--server", "http://127.0.0.1:1", "--participants-file", file.path, "--rate", "5", "--duration", "300ms"]) == 2)
            #expect(try await run(["--server", trio.server.url, "--setup", "1", "--rate", "x"]) == 64)
        }
    }

    @Test(arguments: ["android", "ios"])
    func pushRunDeliversEveryPushAndMeasuresLatency(platform: String) async throws {
        try await Trio.with { trio in
            let options = PushLoadOptions(relay: trio.relay.url, devices: 20, platform: platform, rate: RateSchedule(constant: 100),
                                          duration: .seconds(1), grace: .seconds(3))
            let report = try await PushLoad.run(options, http: trio.http) { _ in }
            #expect(report.totals.started >= 95 && report.totals.started <= 101)
            #expect(report.totals.succeeded == report.totals.started)
            #expect(report.totals.failed == 0)
            #expect(report.errors.isEmpty)
            #expect(report.correct == true)
            #expect(report.latencyMs.p50 > 0 && report.latencyMs.p50 <= report.latencyMs.max)
            #expect(report.scenario == "push(\(platform), 20 devices)")
            // Throughput counts deliveries inside the sending window; rows are by delivery time and add up.
            let inWindow = try #require(report.totals.completedInWindow)
            #expect(abs(report.totals.throughput - Double(inWindow) / report.totals.seconds) < 0.001)
            #expect(report.perSecond.map(\.succeeded).reduce(0, +) == report.totals.succeeded)
            #expect(report.histogram?.hasPrefix("HISTF") == true && report.run != nil)
        }
    }

    /// Runs `survey-cli ARGUMENTS` (output discarded) and returns its exit status.
    static func surveyCLI(_ arguments: [String]) async throws -> Int32 {
        try await ChildProcess.run(Executables.url("survey-cli"), arguments).status
    }

    static func loadPush(_ arguments: [String]) async throws -> Int32 { try await surveyCLI(["load", "push"] + arguments) }

    @Test func pushCLIExitCodes() async throws {
        let run = Self.loadPush
        #expect(try await run(["--relay", "http://127.0.0.1:1", "--devices", "2", "--duration", "200ms"]) == 2)
        #expect(try await run(["--relay", "http://127.0.0.1:1", "--platform", "windows"]) == 64)
        #expect(try await run(["--relay", "http://127.0.0.1:1", "--rate", "5", "--ramp", "0:5/s"]) == 64)
        try await Trio.with { trio async throws in
            let report = temporaryDirectory("push-report").appendingPathComponent("report.json")
            #expect(try await run(["--relay", trio.relay.url, "--devices", "3", "--rate", "20", "--duration", "500ms", "--grace", "2s",
                             "--threshold", "errors<1%", "--report", report.path]) == 0)
            // The flags are kept with the run (they were `{}`), so it can be repeated from the report.
            let written = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: report))
            #expect(written.run?.options["devices"] == "3" && written.run?.options["rate"] == "20.0"
                    && written.run?.options["relay"] == trio.relay.url && written.run?.options["threshold"] == "errors<1%")
            #expect(try await run(["--relay", trio.relay.url, "--devices", "3", "--rate", "20", "--duration", "500ms", "--threshold", "p50<1us"]) == 99)
        }
    }
}
}

/// The push driver writes its request bodies and reads its push events without Foundation's JSON coders; what it
/// writes must decode to the fields it meant, escapes included, and what it reads must match a full decode.
@Suite struct PushLoadWireTests {
    let options = PushLoadOptions(relay: "http://r", devices: 1, rate: RateSchedule(constant: 1), duration: .seconds(1))

    @Test(arguments: [("cJ2x:APA91bQ-_z", "load-7"), ("quote\"token", "load-8"), ("t", "back\\slash")])
    func sendBodiesMatchTheCoders(_ token: String, _ id: String) throws {
        let fcm = PushLoad.sendRequest(id: id, token: token, options: options)
        let sent = try JSONDecoder().decode(RelayWire.FCMSendRequest.self, from: Data(try #require(fcm.body)))
        #expect(sent.message.token == token)
        #expect(sent.message.data?["load_id"] == id)
        #expect(fcm.url == "http://r/v1/projects/survey-trio/messages:send")
        let tree: JSONValue = ["message": ["token": .string(token), "data": ["load_id": .string(id)]]]
        #expect(String(decoding: try #require(fcm.body), as: UTF8.self) == tree.compactText)

        var ios = options
        ios.platform = "ios"
        let apns = PushLoad.sendRequest(id: id, token: token, options: ios)
        let payload = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(apns.body)))
        #expect(payload == ["aps": ["content-available": 1], "load_id": JSONValue.string(id)] as JSONValue)
        #expect(apns.headers.contains { $0.name == "apns-push-type" && $0.value == "background" })

        let ack = PushLoad.ackRequest("http://r/ack", id: id)
        #expect(try JSONDecoder().decode(RelayWire.AckRequest.self, from: Data(try #require(ack.body))).ids == [id])
    }

    @Test func pushEventsReadLikeAFullDecode() throws {
        let plain = ServerSentEvent(id: "m-1", event: "push", data: #"{"id":"m-1","payload":{"data":{"load_id":"load-3"}},"priority":10}"#)
        #expect(PushLoad.pushIDs(plain)! == ("m-1", "load-3"))
        // An escaped load id, or no id line: the full decode.
        let escaped = ServerSentEvent(id: "m-2", event: "push", data: #"{"id":"m-2","payload":{"load_id":"a\"b"},"priority":10,"sent_at":1}"#)
        #expect(PushLoad.pushIDs(escaped)! == ("m-2", "a\"b"))
        let noID = ServerSentEvent(id: nil, event: "push", data: #"{"id":"m-3","payload":{"load_id":"load-4"},"priority":10,"sent_at":1}"#)
        #expect(PushLoad.pushIDs(noID)! == ("m-3", "load-4"))
        #expect(PushLoad.pushIDs(ServerSentEvent(id: nil, event: "push", data: "not json")) == nil)
        // The load id names the iteration the engine records; anything else is a stranger's push.
        #expect(PushPlugin.index(ofLoadID: PushPlugin.loadID(41)) == 41)
        #expect(PushPlugin.index(ofLoadID: "a\"b") == nil && PushPlugin.index(ofLoadID: "load-x") == nil)
    }
}
