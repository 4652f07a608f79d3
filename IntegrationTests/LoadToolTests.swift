import Foundation
import SurveyWire
import Testing
import Transport
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
            #expect(try await trio.admin.stats(setup.studyID).registered == Set(setup.participants.prefix(report.totals.succeeded).map(\.patientID)).count)
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
            func run(_ arguments: [String]) throws -> Int32 {
                let process = Process()
                process.executableURL = Executables.url("survey-cli")
                process.arguments = ["load", "register"] + arguments
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                return process.terminationStatus
            }
            let report = temporaryDirectory("load").appendingPathComponent("report.json")
            #expect(try run(["--server", trio.server.url, "--setup", "10", "--rate", "20", "--duration", "500ms",
                             "--threshold", "errors<1%", "--report", report.path]) == 0)
            let written = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: report))
            #expect(written.schema == LoadReport.schemaVersion)
            #expect(written.thresholds == ["errors<1%": true])
            #expect(try run(["--server", trio.server.url, "--setup", "10", "--rate", "20", "--duration", "500ms", "--threshold", "p50<1us"]) == 99)
            let file = temporaryDirectory("load").appendingPathComponent("p.json")
            try WireJSON.encode(LoadSetup.Result(server: "x", studyID: "0", participants: [.init(patientID: "a", password: "b")])).write(to: file)
            #expect(try run(["--server", "http://127.0.0.1:1", "--participants-file", file.path, "--rate", "5", "--duration", "300ms"]) == 2)
            #expect(try run(["--server", trio.server.url, "--setup", "1", "--rate", "x"]) == 64)
        }
    }
}
}
