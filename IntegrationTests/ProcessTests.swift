import Foundation
import Synchronization
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// Process conventions (PROTOCOL.md §6) and `survey-cli up`.
@Suite(.timeLimit(.minutes(2))) struct ProcessTests {
    @Test func serversStopWithinOneSecondOfSIGTERM() async throws {
        let trio = try await Trio.start()
        #expect(try await trio.admin.health())
        #expect(try await trio.control.health())
        let info = try await trio.admin.info()
        #expect(info.url == trio.server.url)
        #expect(info.relayURL == trio.relay.url)
        #expect(info.kdfIterations == 1000)
        // An open device stream must not hold the relay up.
        let token = try await trio.control.registerDevice(platform: "ios")
        let stream = try await trio.http.eventStream(TransportRequest(url: trio.relay.url + "/v1/devices/\(token)/stream"))
        #expect(stream.status == 200)
        let serverWait = await trio.server.stop()
        let relayWait = await trio.relay.stop()
        // The contract is 1 s (servers force an exit at 0.9 s); the margin covers this test's own polling on a busy CI box.
        #expect(serverWait < 1.25)
        #expect(relayWait < 1.25)
        #expect(trio.server.terminationStatus == 0)
        #expect(trio.relay.terminationStatus == 0)
        trio.http.shutdown()
    }

    /// Issue 31: SIGTERM under keep-alive load always ended by the forced exit (0.9-1.75 s, status 0) and dropped the
    /// answers of writes the server had committed. Now each connection answers what it owes, then closes: every write
    /// stored is one its client was told of, and the stop is a clean one.
    @Test func aStopUnderKeepAliveLoadAnswersEveryWriteItCommitted() async throws {
        let path = temporaryDirectory("stop").appendingPathComponent("server.sqlite").path
        let trio = try await Trio.start(.init(database: path))
        let study = try await trio.admin.createStudy(.init(name: "stop", scheduling: "server"))
        final class Acknowledged: Sendable { let count = Mutex(0) }
        let acknowledged = Acknowledged()
        let url = trio.server.url + "/__admin/studies/\(study.studyID)/participants"
        let clients = (0..<8).map { _ in
            Task {
                let http = TransportClient(configuration: .init(defaultTimeout: .seconds(5), maxConnectionsPerHost: 1))
                defer { http.shutdown() }
                while let answer = try? await http.send(.json(url, body: ["count": 1] as JSONValue)), answer.status == 201 || answer.status == 200 {
                    acknowledged.count.withLock { $0 += 1 }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        let wait = await trio.server.stop()
        for client in clients { await client.value }
        _ = await trio.relay.stop()
        trio.http.shutdown()
        #expect(wait < 1.25)
        #expect(trio.server.terminationStatus == 0, "the stop was forced")
        let told = acknowledged.count.withLock { $0 }
        #expect(told > 0)
        let stored = try await Trio.with(.init(database: path)) { again in try await again.admin.stats(study.studyID).participants }
        #expect(stored == told, "participants stored against answers given")
    }

    /// PROTOCOL.md §7: every binary answers `--version` with `NAME VERSION`, exit 0; the servers report it too.
    @Test func everyBinaryAnswersVersion() async throws {
        for name in ["mock-server", "push-relay", "survey-cli"] {
            let version = try await ChildProcess.run(Executables.url(name), ["--version"])
            #expect(version.status == 0)
            #expect(version.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(name) \(TrioVersion.current)")
        }
        try await Trio.with { trio in
            #expect(try await trio.admin.info().version == TrioVersion.current)
            let health = try await trio.http.send(TransportRequest(url: trio.relay.url + "/__control/health")).decode([String: String].self)
            #expect(health["version"] == TrioVersion.current)
        }
    }

    @Test func metricsArePrometheusText() async throws {
        try await Trio.with { trio in
            _ = try await trio.admin.health()
            let text = try await trio.http.send(TransportRequest(url: trio.server.url + "/metrics")).text
            #expect(text.contains("# TYPE http_requests_total counter"))
            #expect(text.contains(#"route="/__admin/health",status="200""#))
        }
    }

    @Test func fileDatabaseKeepsDataAcrossARestart() async throws {
        let dir = temporaryDirectory("db")
        let path = dir.appendingPathComponent("server.sqlite").path
        let studyID = try await Trio.with(.init(database: path)) { trio in
            let setup = try await StudySetup.make(trio)
            return setup.study.studyID
        }
        try await Trio.with(.init(database: path)) { trio in
            let study = try await trio.admin.study(studyID)
            #expect(study.clock.now == mondayBeforeNineChicago)
            #expect(try await trio.admin.stats(studyID).participants == 1)
        }
    }

    @Test func badArgumentsFailFastWithAMessage() async throws {
        await #expect(throws: LaunchError.self) {
            _ = try await ServerProcess.launch(executable: Executables.url("mock-server"), arguments: ["--port", "99999"],
                                               logFile: temporaryDirectory("log").appendingPathComponent("x.log"), timeout: .seconds(5))
        }
        await #expect(throws: LaunchError.self) {
            _ = try await ServerProcess.launch(executable: Executables.url("mock-server"), arguments: ["--host", "0.0.0.0"],
                                               logFile: temporaryDirectory("log").appendingPathComponent("y.log"), timeout: .seconds(5))
        }
    }

    /// `up --parent-pid`: when the test runner dies (here a stand-in killed with SIGKILL), `up` and both servers stop.
    @Test func surveyCLIUpNeverOutlivesItsParent() async throws {
        let dir = temporaryDirectory("up-parent")
        let parent = Process()
        parent.executableURL = URL(fileURLWithPath: "/bin/sleep")
        parent.arguments = ["300"]
        try parent.run()
        let up = try await ServerProcess.launch(executable: Executables.url("survey-cli"),
                                                arguments: ["up", "--data-dir", dir.path, "--parent-pid", String(parent.processIdentifier)],
                                                logFile: dir.appendingPathComponent("cli.log"))
        let server = try #require(up.ready.mockServer)
        let relay = try #require(up.ready.pushRelay)
        let http = TransportClient()
        defer { http.shutdown() }
        #expect(try await http.send(TransportRequest(url: server + "/__admin/health")).status == 200)
        kill(parent.processIdentifier, SIGKILL)
        await ChildProcess.exit(of: parent)
        #expect(try await eventually(.seconds(5)) { !up.isRunning })
        #expect(try await eventually(.seconds(5)) {
            await Self.bothDown(http, server: server, relay: relay)
        })
    }

    /// The executables are found next to the test bundle; a missing one is reported with every place tried.
    @Test func executablesAreFoundOrTheSearchIsExplained() throws {
        let server = try Executables.locate("mock-server")
        #expect(FileManager.default.isExecutableFile(atPath: server.path))
        do {
            _ = try Executables.locate("no-such-trio-binary")
            Issue.record("a missing executable was found")
        } catch {
            #expect(error.description.contains("TRIO_BIN_DIR"))
            #expect(error.tried.contains("/usr/bin"))
        }
    }

    /// True when neither server answers its health route any more.
    static func bothDown(_ http: TransportClient, server: String, relay: String) async -> Bool {
        let serverDown = (try? await http.send(TransportRequest(url: server + "/__admin/health"))) == nil
        let relayDown = (try? await http.send(TransportRequest(url: relay + "/__control/health"))) == nil
        return serverDown && relayDown
    }

    /// `up` killed with SIGKILL (no chance to stop anything): both servers, which watch `up` as their parent, stop.
    @Test func serversNeverOutliveAKilledUp() async throws {
        let dir = temporaryDirectory("up-kill")
        let up = try await ServerProcess.launch(executable: Executables.url("survey-cli"), arguments: ["up", "--data-dir", dir.path],
                                                logFile: dir.appendingPathComponent("cli.log"))
        let server = try #require(up.ready.mockServer)
        let relay = try #require(up.ready.pushRelay)
        let http = TransportClient()
        defer { http.shutdown() }
        #expect(try await http.send(TransportRequest(url: relay + "/__control/health")).status == 200)
        kill(Int32(up.ready.pid), SIGKILL)
        #expect(try await eventually(.seconds(5)) {
            await Self.bothDown(http, server: server, relay: relay)
        })
    }

    /// `device listen --parent-pid`: the device stops (and releases its directory) when its parent is killed.
    @Test func deviceListenNeverOutlivesItsParent() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let dataDir = temporaryDirectory("listen-parent")
            let register = try await ChildProcess.run(Executables.url("survey-cli"), [
                "device", "register", "--data-dir", dataDir.path, "--server", trio.server.url, "--relay", trio.relay.url,
                "--patient-id", setup.credentials.patientID, "--password", setup.credentials.password])
            #expect(register.status == 0)
            let parent = Process()
            parent.executableURL = URL(fileURLWithPath: "/bin/sleep")
            parent.arguments = ["300"]
            try parent.run()
            let listen = try CrashTests.Listener(dataDir: dataDir, extra: ["--parent-pid", String(parent.processIdentifier)])
            try await listen.waitFor("listening")
            kill(parent.processIdentifier, SIGKILL)
            await ChildProcess.exit(of: parent)
            #expect(try await eventually(.seconds(5)) { !listen.process.isRunning })
            if listen.process.isRunning { listen.process.terminate() }
        }
    }

    /// A child that dies makes `up` say which, with its exit status and last log lines, stop the other and exit 1.
    @Test func surveyCLIUpReportsAChildThatDied() async throws {
        let dir = temporaryDirectory("up-child")
        let up = try await ServerProcess.launch(executable: Executables.url("survey-cli"), arguments: ["up", "--data-dir", dir.path],
                                                logFile: dir.appendingPathComponent("cli.log"))
        let http = TransportClient()
        defer { http.shutdown() }
        let admin = AdminClient(baseURL: try #require(up.ready.mockServer), http: http)
        let serverPID = try await admin.info().pid
        kill(Int32(serverPID), SIGKILL)
        #expect(try await eventually(.seconds(5)) { !up.isRunning })
        #expect(up.terminationStatus == 1)
        #expect(up.logs().contains("mock-server exited with status"))
        let relay = try #require(up.ready.pushRelay)
        #expect(try await eventually(.seconds(5)) { (try? await http.send(TransportRequest(url: relay + "/__control/health"))) == nil })
    }

    @Test func surveyCLIUpPrintsOneReadyLineAndStopsBothOnSIGTERM() async throws {
        let dir = temporaryDirectory("up")
        let up = try await ServerProcess.launch(executable: Executables.url("survey-cli"), arguments: ["up", "--data-dir", dir.path],
                                                logFile: dir.appendingPathComponent("cli.log"))
        let server = try #require(up.ready.mockServer)
        let relay = try #require(up.ready.pushRelay)
        let http = TransportClient()
        defer { http.shutdown() }
        #expect(try await http.send(TransportRequest(url: server + "/__admin/health")).status == 200)
        #expect(try await http.send(TransportRequest(url: relay + "/__control/health")).status == 200)
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("mock-server.sqlite").path))
        await up.stop()
        #expect(up.terminationStatus == 0)
        await #expect(throws: TransportError.self) { try await http.send(TransportRequest(url: server + "/__admin/health")) }
        await #expect(throws: TransportError.self) { try await http.send(TransportRequest(url: relay + "/__control/health")) }
    }
}
}
