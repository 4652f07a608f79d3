import ClientSDK
import Foundation
import Scheduling
import Synchronization
import SurveyWire
import Testing
import Transport
import TrioTesting

struct ListenerError: Error, CustomStringConvertible {
    var description: String
}

extension Integration {
/// `survey-cli device` killed with SIGKILL at seeded random moments while it fetches, answers, uploads and sends
/// pings, then started again: nothing is lost, nothing arrives twice, no occurrence is shown twice.
@Suite(.timeLimit(.minutes(4))) struct CrashTests {
    /// A running `survey-cli device listen` whose stdout lines are collected.
    /// Complete lines of a stream, collected as chunks arrive.
    final class LineBuffer: Sendable {
        private let state = Mutex<(lines: [String], partial: String)>(([], ""))

        func append(_ chunk: String) {
            state.withLock { s in
                s.partial += chunk
                while let newline = s.partial.firstIndex(of: "\n") {
                    s.lines.append(String(s.partial[..<newline]))
                    s.partial.removeSubrange(...newline)
                }
            }
        }

        var lines: [String] { state.withLock { $0.lines } }
    }

    final class Listener: Sendable {
        let process: Process
        private let buffer = LineBuffer()

        init(dataDir: URL, extra: [String] = []) throws {
            process = Process()
            process.executableURL = Executables.url("survey-cli")
            process.arguments = ["device", "listen", "--data-dir", dataDir.path, "--auto-answer", "--telemetry-batch", "1", "--pings-per-minute", "1000"] + extra
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            let buffer = self.buffer
            pipe.fileHandleForReading.readabilityHandler = { handle in
                buffer.append(String(decoding: handle.availableData, as: UTF8.self))
            }
            try process.run()
        }

        var output: [String] { buffer.lines }

        func waitFor(_ event: String, timeout: Duration = .seconds(20)) async throws {
            let deadline = ContinuousClock.now + timeout
            while !output.contains(where: { $0.contains("\"event\":\"\(event)\"") }) {
                guard ContinuousClock.now < deadline, process.isRunning else {
                    throw ListenerError(description: "survey-cli device listen did not print \(event); it printed:\n" + output.joined(separator: "\n"))
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        func kill() async {
            Foundation.kill(process.processIdentifier, SIGKILL)
            await ChildProcess.exit(of: process)
        }
    }

    /// `survey-cli device status` of a device directory.
    static func status(_ dataDir: URL) async throws -> SurveyClientStatus {
        let check = try await ChildProcess.run(Executables.url("survey-cli"), ["device", "status", "--data-dir", dataDir.path])
        return try WireJSON.decode(SurveyClientStatus.self, from: Data(check.output.utf8))
    }

    @Test func fiftyKillsLoseNothingAndDuplicateNothing() async throws {
        try await Trio.with { trio in
            // Due every hour of the week, so each clock step of an hour fires one push.
            var survey = moodSurvey
            survey.schedules = (0..<7).flatMap { day in (0..<24).map { hour in
                Schedule.weekly(dayOfWeek: day, time: LocalTime(hour: hour, minute: 30), from: nil, until: nil)
            } }
            let study = try await trio.admin.createStudy(.init(name: "crash", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago)))
            _ = try await trio.admin.createSurvey(study: study.studyID, survey)
            let who = try await trio.admin.createParticipants(study: study.studyID)[0]
            let dataDir = temporaryDirectory("crash")
            let register = try await ChildProcess.run(Executables.url("survey-cli"), [
                "device", "register", "--data-dir", dataDir.path, "--server", trio.server.url, "--relay", trio.relay.url,
                "--patient-id", who.patientID, "--password", who.password, "--timezone", "America/Chicago",
                "--telemetry-url", trio.server.url, "--features-url", trio.server.url])
            #expect(register.status == 0)

            let token = try #require(try await Self.status(dataDir).pushToken)
            var random = SeededRandom(seed: 20_261_122)
            var lines: [String] = []
            let iterations = 50
            for iteration in 0..<iterations {
                lines.append("--- run \(iteration)")
                let listener = try Listener(dataDir: dataDir)
                try await listener.waitFor("listening")
                // A push the last run left unacked comes again first; let it be handled before the next one is due, so
                // every occurrence reaches the device on its own (one stored survey per survey id, as on Beiwe's apps).
                #expect(try await eventually(.seconds(10)) { try await trio.control.device(token).pending.isEmpty })
                _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 3600)
                // Somewhere in fetching the spec, answering, uploading and sending pings.
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...150, using: &random)))
                await listener.kill()
                lines += listener.output
            }
            // A last clean run finishes whatever was left: stored surveys, the upload outbox, pings.
            lines.append("--- last run")
            let last = try Listener(dataDir: dataDir, extra: ["--for", "3s"])
            try await last.waitFor("listening")
            await ChildProcess.exit(of: last.process)
            lines += last.output

            let sent = try await trio.admin.pushes(study: study.studyID).filter { $0.status == "sent" }
            #expect(sent.count == iterations)
            // One submission per pushed occurrence: none lost, none twice.
            let submissions = try await trio.admin.submissions(study: study.studyID)
            #expect(submissions.count == sent.count)
            // Every answer file the device reported submitted is a server submission (a kill between the server's answer
            // and the event leaves one unreported, never one extra).
            let files = Set(lines.compactMap { line -> String? in
                guard line.contains("\"event\":\"submitted\"") else { return nil }
                return (try? WireJSON.decode(JSONValue.self, from: line))?["file_name"]?.stringValue
            })
            #expect(files.count <= submissions.count && files.count >= submissions.count - iterations / 5)
            // No occurrence surfaced twice.
            let surfaced = lines.compactMap { line -> [String]? in
                guard line.contains("\"event\":\"survey_available\""), let object = try? WireJSON.decode(JSONValue.self, from: line) else { return nil }
                return object["schedule_uuids"]?.arrayValue?.compactMap(\.stringValue)
            }
            let allSurfaced = surfaced.flatMap { $0 }
            let twice = Set(allSurfaced.filter { uuid in allSurfaced.filter { $0 == uuid }.count > 1 })
            #expect(twice.isEmpty, "shown twice: \(twice); output:\n\(lines.filter { !$0.contains("telemetry_sent") }.joined(separator: "\n"))")
            // Telemetry: every ping the device reported sent is stored, each document once.
            let stored = try await trio.admin.telemetry()
            #expect(Set(stored.map(\.documentID)).count == stored.count)
            let reported = Set(lines.compactMap { line -> String? in
                guard line.contains("\"event\":\"telemetry_sent\"") else { return nil }
                return (try? WireJSON.decode(JSONValue.self, from: line))?["document_id"]?.stringValue
            })
            #expect(reported.isSubset(of: Set(stored.map(\.documentID))))
            // Killed runs are noticed at the next start (`dirty_startup`), and no ping number is lost: every seq from 0
            // to the highest is stored, per ping name (Firefox: gaps for 6.2% of clients, bug B16).
            let baselineReasons = stored.filter { $0.ping == "baseline" }.compactMap { $0.body["ping_info"]?["reason"]?.stringValue }
            #expect(baselineReasons.contains("dirty_startup"))
            let gaps = try await trio.admin.telemetryGaps()
            #expect(Set(gaps.map(\.ping)) == ["events", "baseline"])
            #expect(gaps.allSatisfy { $0.missing.isEmpty }, "seq gaps: \(gaps.filter { !$0.missing.isEmpty })")
            // Nothing is left waiting on the device.
            let left = try await Self.status(dataDir)
            #expect(left.pendingSurveys.isEmpty)
            #expect(left.uploadsWaiting == 0)
            #expect(left.pingsWaiting == 0)
            #expect(left.eventsWaiting == 0)
            #expect(left.quarantined.isEmpty)
        }
    }
}
}
