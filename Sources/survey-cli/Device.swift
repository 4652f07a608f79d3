import ArgumentParser
import ClientSDK
import DeviceHost
import Foundation
import Logging
import SurveyWire
import TrioLoad
import TrioTesting

/// `survey-cli device ...`: one simulated participant device kept in a directory, so a shell user or a test in another
/// language can be a participant. Every command prints JSON lines on stdout.
struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Act as a participant's device: register, listen for pushes, answer surveys, show status (JSON lines).",
        subcommands: [DeviceRegister.self, DeviceListen.self, DeviceAnswer.self, DeviceStatus.self])
}

/// What `device register` keeps in the data directory (`device.json`) so later commands need only `--data-dir`.
struct DeviceProfile: Codable {
    var server: String
    /// nil: no relay (device scheduling and `/download_surveys` only).
    var relay: String?
    var patientID: String
    var temporaryPassword: String
    var newPassword: String?
    var platform: String
    var timeZone: String
    /// Where pings and feature values go (nil: kept queued / not fetched), and the `os_version` sent.
    var telemetryURL: String?
    var featuresURL: String?
    var osVersion: String?

    enum CodingKeys: String, CodingKey {
        case server, relay, patientID = "patient_id", temporaryPassword = "temporary_password", newPassword = "new_password"
        case platform, timeZone = "timezone", telemetryURL = "telemetry_url", featuresURL = "features_url", osVersion = "os_version"
    }

    static func url(_ dataDir: String) -> URL { URL(fileURLWithPath: dataDir).appendingPathComponent("device.json") }

    /// Writes `device.json` readable by its owner alone (it holds the temporary password), replacing it atomically.
    static func save(_ profile: DeviceProfile, in dataDir: String) throws {
        let url = url(dataDir)
        let temporary = url.path + ".tmp"
        unlink(temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: try WireJSON.encode(profile), attributes: [.posixPermissions: 0o600]),
              rename(temporary, url.path) == 0
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
    }

    static func load(_ dataDir: String) throws -> DeviceProfile {
        let url = url(dataDir)
        guard let data = try? Data(contentsOf: url) else {
            throw DeviceFailure(code: "not_set_up", message: "no \(url.path): run `survey-cli device register --data-dir \(dataDir) ...` first")
        }
        do {
            return try WireJSON.decode(DeviceProfile.self, from: data)
        } catch {
            throw DeviceFailure(code: "bad_profile", message: "\(url.path) cannot be read: \(error)")
        }
    }

    func configuration(_ dataDir: String) -> SurveyClientConfiguration {
        SurveyClientConfiguration(serverURL: server, relayURL: relay, storageDirectory: URL(fileURLWithPath: dataDir),
                                  patientID: patientID, temporaryPassword: temporaryPassword, newPassword: newPassword,
                                  platform: platform == "ios" ? .ios : .android, timeZone: timeZone, telemetryURL: telemetryURL,
                                  featuresURL: featuresURL, osVersion: osVersion)
    }
}

/// A device command that failed: printed as a JSON `error` line, exit status 1.
struct DeviceFailure: Error {
    var code: String
    var message: String
}

/// JSON lines on stdout, written at once (the reader may be another process waiting for them).
enum DeviceOutput {
    static func line(_ object: [String: JSONValue]) {
        let text = (try? WireJSON.encodeString(JSONValue.object(object))) ?? "{}"
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func event(_ event: SurveyClientEvent) { line(DeviceEventLine.object(event)) }

    static func failure(_ code: String, _ message: String, status: Int? = nil) {
        line(DeviceEventLine.failure(code, message, status: status))
    }

    /// Runs `body`, printing a failure as an `error` line and exiting 1.
    static func run(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            if let failed = error as? DeviceFailure {
                failure(failed.code, failed.message)
            } else if let failed = error as? SurveyClientError {
                failure(failed.code, failed.message, status: failed.status)
            } else {
                failure("error", "\(error)")
            }
            throw ExitCode(1)
        }
    }
}

/// Logs go to stderr at warning and up, so stdout carries only JSON lines.
func deviceLogger() -> Logger {
    var logger = Logger(label: "survey-cli.device") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = .warning
    return logger
}

struct DeviceRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "register",
                                                    abstract: "Get a relay token, register with the study server, keep the device in --data-dir.")
    @Option(help: "Directory holding this device.") var dataDir: String
    @Option(help: "Study server URL.") var server: String
    @Option(help: "Push relay URL (optional: without it the device gets no pushes, schedules surveys itself and polls /download_surveys).")
    var relay: String?
    @Option(help: "Participant id.") var patientId: String
    @Option(help: "Temporary password from the study.") var password: String
    @Option(help: "New password sent at registration (default: the temporary one).") var newPassword: String?
    @Option(help: "android or ios.") var platform = "android"
    @Option(help: "Device time zone (tz database name).") var timezone = "America/New_York"
    @Option(help: "Where telemetry pings go (the trio's mock server serves /submit; a real Beiwe server does not). Default: pings stay queued.")
    var telemetryUrl: String?
    @Option(help: "Where feature values come from (/features on the trio's mock server). Default: none are fetched.") var featuresUrl: String?
    @Option(help: "os_version sent on every request, at most 16 characters (Beiwe's column). Default: the host's VERSION_ID.")
    var osVersion: String?

    func validate() throws {
        guard ["android", "ios"].contains(platform) else { throw ValidationError("--platform must be android or ios") }
        if let osVersion, osVersion.isEmpty || osVersion.count > 16 {
            throw ValidationError("--os-version must have 1-16 characters (Beiwe stores it in a 16-character column)")
        }
    }

    func run() async throws {
        try await DeviceOutput.run {
            try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let profile = DeviceProfile(server: server, relay: relay, patientID: patientId, temporaryPassword: password,
                                        newPassword: newPassword, platform: platform, timeZone: timezone, telemetryURL: telemetryUrl,
                                        featuresURL: featuresUrl, osVersion: osVersion)
            try DeviceProfile.save(profile, in: dataDir)
            let client = try SurveyClient(configuration: profile.configuration(dataDir), logger: deviceLogger())
            let events = Task { for await event in client.events { DeviceOutput.event(event) } }
            do {
                try await client.start()
            } catch {
                await client.close()
                _ = await events.value
                throw error
            }
            await client.close()
            _ = await events.value
        }
    }
}

struct DeviceListen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Run the device: print one JSON line per event until SIGTERM/SIGINT or --for has passed.",
        discussion: """
            Prints {"event":"listening"} once started. With --auto-answer every survey that becomes available (and every one \
            stored from before) is answered at once.
            """)
    @Option(help: "Directory holding this device.") var dataDir: String
    @Option(name: .customLong("for"), help: "Stop after this long, e.g. 30s (default: until a signal).") var duration: String?
    @Flag(help: "Answer each available survey at once (every question with --answer-value).") var autoAnswer = false
    @Option(help: "The answer --auto-answer gives every question.") var answerValue = "1"
    @Option(help: "Events that make a telemetry ping (reason max_capacity; Glean: 500).") var telemetryBatch = 500
    @Option(help: "Telemetry pings uploaded per minute at most (Glean: 15).") var pingsPerMinute = 15
    @Flag(help: "Opt out of telemetry: delete what is waiting and send one deletion-request ping.") var telemetryOff = false
    @Option(help: """
        Exit 0 once this event has been printed N times (EVENT or EVENT=N, e.g. submitted=2); with --for, exit 1 when \
        the time runs out first. Events: \(ListenUntil.events.sorted().joined(separator: ", ")).
        """) var until: String?
    @Option(help: "Stop when the process with this pid is gone (e.g. the test runner's).") var parentPid: Int32?

    func validate() throws {
        if let duration {
            do { _ = try parseDuration(duration, flag: "--for") } catch { throw ValidationError("--for: \(error)") }
        }
        if let until { _ = try ListenUntil(until) }
    }

    func run() async throws {
        let limit = try duration.map { try parseDuration($0, flag: "--for") }
        let goal = try until.map { try ListenUntil($0) }
        try await DeviceOutput.run {
            let signals = SignalWaiter([SIGTERM, SIGINT])
            let profile = try DeviceProfile.load(dataDir)
            var configuration = profile.configuration(dataDir)
            configuration.telemetryBatchSize = max(1, telemetryBatch)
            configuration.telemetry.pingsPerInterval = max(1, pingsPerMinute)
            configuration.telemetry.uploadEnabled = !telemetryOff
            let client = try SurveyClient(configuration: configuration, logger: deviceLogger())
            let autoAnswer = self.autoAnswer, value = answerValue
            let (reached, reachedContinuation) = AsyncStream<Void>.makeStream()
            let events = Task {
                var seen = 0
                for await event in client.events {
                    DeviceOutput.event(event)
                    if let goal, goal.matches(event) {
                        seen += 1
                        if seen == goal.count { reachedContinuation.yield() }
                    }
                    if autoAnswer, case .surveyAvailable(let survey) = event {
                        Task { try? await DeviceListen.answer(client, survey, value) }
                    }
                }
            }
            try await client.start()
            if autoAnswer {
                for survey in await client.pendingSurveys() { try? await Self.answer(client, survey, value) }
            }
            DeviceOutput.line(["event": "listening"])
            let reason = await signals.wait(upTo: limit, parentPID: parentPid, done: goal == nil ? nil : reached)
            await client.close()
            _ = await events.value
            if let goal, reason == .timeout {
                throw DeviceFailure(code: "until_not_seen", message: "\(goal.event) was not seen \(goal.count) time(s) within --for")
            }
        }
    }

    static func answer(_ client: SurveyClient, _ survey: StoredSurvey, _ value: String) async throws {
        try await client.submit(answers: survey.answers(allWith: value), for: survey.surveyID)
    }
}

struct DeviceAnswer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "answer", abstract: "Answer one stored survey and upload it.")
    @Option(help: "Directory holding this device.") var dataDir: String
    @Option(help: "The survey to answer.") var survey: String
    @Option(name: .customLong("answer"), help: "question_id=answer (repeatable); unanswered questions are left empty.")
    var answers: [String] = []

    func run() async throws {
        var given: [String: String] = [:]
        for pair in answers {
            guard let equals = pair.firstIndex(of: "=") else { throw ValidationError("--answer '\(pair)' is not question_id=answer") }
            given[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        try await DeviceOutput.run {
            let profile = try DeviceProfile.load(dataDir)
            let client = try SurveyClient(configuration: profile.configuration(dataDir), logger: deviceLogger())
            let events = Task { for await event in client.events { DeviceOutput.event(event) } }
            defer { events.cancel() }
            do {
                try await client.submit(answers: given, for: survey)
            } catch {
                await client.close()
                throw error
            }
            await client.close()
            _ = await events.value
        }
    }
}

struct DeviceStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Print what the device holds, as one JSON line.")
    @Option(help: "Directory holding this device.") var dataDir: String

    func run() async throws {
        try await DeviceOutput.run {
            let profile = try DeviceProfile.load(dataDir)
            let client = try SurveyClient(configuration: profile.configuration(dataDir), logger: deviceLogger())
            let status = await client.status()
            await client.close()
            FileHandle.standardOutput.write(Data(((try? WireJSON.encodeString(status)) ?? "{}").utf8 + [10]))
        }
    }
}

/// `device listen --until EVENT[=N]`: the event (by its JSON name) and how many times it must be seen.
struct ListenUntil: Sendable {
    /// The `event` names `device listen` prints (docs/cli.md).
    static let events: Set<String> = DeviceEventLine.names
    var event: String
    var count: Int

    init(_ text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard let name = parts.first, Self.events.contains(name) else {
            throw ValidationError("--until: '\(text)' does not name an event (\(Self.events.sorted().joined(separator: ", ")))")
        }
        event = name
        count = 1
        if parts.count == 2 {
            guard let n = Int(parts[1]), n >= 1 else { throw ValidationError("--until: the count after = must be a positive integer") }
            count = n
        }
    }

    func matches(_ event: SurveyClientEvent) -> Bool {
        DeviceEventLine.name(of: event) == self.event
    }
}
