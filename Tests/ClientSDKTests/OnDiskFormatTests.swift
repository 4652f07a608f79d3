import Foundation
import SurveyCrypto
import Testing
@testable import ClientSDK

/// Directories written by an earlier SDK (`Fixtures/sdk-0.1.0`, made by version 0.1.0 at commit 0b0f6d9 and never
/// regenerated) open with this one and go on where they stopped: no second token or registration, the stored surveys,
/// the answers waiting in the outbox uploaded unchanged, the queued pings sent, a crash's open event log kept.
@Suite struct OnDiskFormatTests {
    /// A written fixture: a copy of its device directory (tests never change the fixture) and its study's key.
    struct Fixture {
        let directory: URL
        let key: RSAKey
        let state: [String: Any]

        init(_ name: String) throws {
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Fixtures/sdk-0.1.0/\(name)")
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-fixture-\(UUID().uuidString.prefix(8))")
            try FileManager.default.copyItem(at: source.appendingPathComponent("device"), to: directory)
            let der = try String(contentsOf: source.appendingPathComponent("study-key.der.b64"), encoding: .utf8)
            key = try RSAKey(privateKeyDER: [UInt8](Data(base64Encoded: der.trimmingCharacters(in: .whitespacesAndNewlines))!))
            let stateData = try Data(contentsOf: directory.appendingPathComponent("state.json"))
            state = try JSONSerialization.jsonObject(with: stateData) as? [String: Any] ?? [:]
        }

        /// Files under `relative` (names only).
        func files(_ relative: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(relative).path)) ?? []).sorted()
        }

        /// A client on the copy, as the fixture's was configured, with the clock a few hours after it was written (so
        /// no queued ping is past its age limit whenever this runs).
        func client(_ study: MemoryStudy) throws -> SurveyClient {
            try SurveyClient(configuration: MemoryStudy.configuration(directory, telemetry: true), transport: study,
                                    now: { Date(timeIntervalSince1970: 1_795_800_000) })
        }
    }

    static func study(_ fixture: Fixture) -> MemoryStudy {
        let study = MemoryStudy(key: fixture.key, ingestsTelemetry: true)
        study.addSurvey("s1")
        study.addSurvey("s2", name: "Sleep")
        return study
    }

    @Test func aCleanlyClosedDirectoryGoesOnWhereItStopped() async throws {
        let fixture = try Fixture("closed")
        let upload = try #require(fixture.files("outbox/uploads").first)
        let queuedPings = fixture.files("outbox/pings").map { $0.replacingOccurrences(of: ".json", with: "") }
        #expect(queuedPings.count == 3)
        let study = Self.study(fixture)
        let client = try fixture.client(study)

        // Read before any request: the token, registration, surveys and outboxes as the old SDK left them.
        let before = await client.status()
        #expect(before.registered && before.studyID == "study-1" && before.pushToken == "tok-1")
        #expect(before.pendingSurveys == ["s2"])      // s1's answers wait in the outbox: it is being submitted
        // The stored spec reads in the SDK's own vocabulary (the file keeps SurveyWire's form).
        let sleep = try #require(await client.pendingSurveys().first)
        #expect(sleep.name == "Sleep" && sleep.surveyType == "tracking_survey" && sleep.scheduleUUIDs == ["u2"])
        #expect(sleep.questions.map(\.id) == ["q1"] && sleep.questions.first?.kind == .slider)
        #expect(sleep.questions.first?.minimum == "0" && sleep.questions.first?.maximum == "10" && sleep.questions.first?.text == "How are you?")
        #expect(before.uploadsWaiting == 1 && before.pingsWaiting == 3)
        #expect(await client.clientID == fixture.state["clientID"] as? String)
        #expect(await client.userAttributes == ["cohort": "a"])
        #expect(await client.recordedBehaviors == ["homepage_viewed"])

        let tap = InMemoryFlowTests.EventTap(client)
        try await client.start()
        // No second token, registration or /set_fcm_token: the server already holds tok-1.
        #expect(study.mintedTokens.isEmpty)
        #expect(study.seen("/register_user").isEmpty && study.seen("/set_fcm_token").isEmpty)
        #expect(await study.until { study.openStreams == ["tok-1"] })
        // The old outbox file goes out unchanged, and decrypts with the study's key.
        #expect(await study.until { tap.count(InMemoryFlowTests.isSubmitted) == 1 })
        let sent = try #require(study.seen("/upload").first)
        #expect(sent.form["file_name"].map { $0 + ".json" } == upload)
        #expect(try study.uploadedAnswers() == [["q1": "7"]])
        // Every queued ping is delivered under its own document id.
        #expect(await study.until {
            let paths = study.seen.filter { $0.path.hasPrefix("/submit/") }.map(\.path)
            return queuedPings.allSatisfy { id in paths.contains { $0.hasSuffix("/" + id) } }
        })

        // The stored survey left unanswered is answered with the stored key.
        try await client.submit(answers: ["q1": "3"], for: "s2")
        #expect(try study.uploadedAnswers() == [["q1": "7"], ["q1": "3"]])
        #expect(await client.status().pendingSurveys.isEmpty)
        await client.close()
    }

    @Test func aDirectoryLeftByACrashReportsTheCrashAndKeepsItsEvents() async throws {
        let fixture = try Fixture("crashed")
        #expect(fixture.state["dirty"] as? Bool == true)
        #expect(fixture.files("telemetry").contains("events.jsonl"))
        let study = Self.study(fixture)
        let client = try fixture.client(study)
        #expect(await client.status().eventsWaiting > 0)
        let tap = InMemoryFlowTests.EventTap(client)
        try await client.start()
        #expect(study.mintedTokens.isEmpty && study.seen("/register_user").isEmpty)
        #expect(await study.until { tap.count(InMemoryFlowTests.isSubmitted) == 1 })
        // The crash is reported (`dirty_startup`), and the events the crashed run recorded reach the server.
        #expect(await study.until {
            let bodies = study.seen.filter { $0.path.hasPrefix("/submit/") }.map { String(decoding: $0.body, as: UTF8.self) }
            return bodies.contains { $0.contains("dirty_startup") } && bodies.contains { $0.contains("left_open") }
        })
        await client.close()
    }

    /// A state file as the first release wrote it: none of the fields added since (`announcedToken`, `seqs`, `dirty`,
    /// `firstRunDate`, ...), and telemetry events kept in the state itself (before the event log). It opens: the events
    /// move to the log, and since nothing says the server holds the token, the start tells it again.
    @Test func aStateFromTheFirstReleaseOpensAndIsCompleted() async throws {
        let directory = InMemoryFlowTests.directory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = Data(MemoryStudy.sharedKey.publicKeyDER()).base64EncodedString()
        let state = """
            {"deviceID":"d-1","relayToken":"tok-7","passwordHash":"\(BeiwePassword.deviceHash("temp"))","registered":true,
             "studyID":"study-1","scheduling":"server","timeZone":"America/Chicago","publicKey":"\(key)","clientID":"c-1",
             "pingSeq":0,"seenNonces":[],"seenUUIDs":["u0"],"deviceSurveys":[],
             "pendingEvents":[{"timestampMillis":1795700000000,"category":"old","name":"kept_in_state"}]}
            """
        try Data(state.utf8).write(to: directory.appendingPathComponent("state.json"))
        let study = MemoryStudy(ingestsTelemetry: true)
        let client = try SurveyClient(configuration: MemoryStudy.configuration(directory, telemetry: true), transport: study)
        #expect(await client.status().eventsWaiting == 1)
        #expect(await client.clientID == "c-1")
        #expect(await client.pushToken == "tok-7")
        try await client.start()
        #expect(study.mintedTokens.isEmpty && study.seen("/register_user").isEmpty)
        #expect(study.seen("/set_fcm_token").map { $0.form["fcm_token"] } == ["tok-7"])
        #expect(await study.until { study.openStreams == ["tok-7"] })
        await client.close()
        let events = study.pings("events").flatMap { $0.body["events"]?.arrayValue ?? [] }.compactMap { $0["name"]?.stringValue }
        #expect(events.contains("kept_in_state"))
        #expect(study.pings().allSatisfy { $0.body["client_info"]?["first_run_date"]?.stringValue != nil })
    }
}
