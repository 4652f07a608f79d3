import ArgumentParser
import Foundation
import SurveyWire
import Transport
import TrioLoad
import TrioTesting

/// `survey-cli load ...`: load tests of the registration flow.
struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load-test registration against any server speaking the Beiwe mobile API, and push delivery through the relay.",
        subcommands: [LoadSetupCommand.self, LoadRegisterCommand.self, LoadPushCommand.self, LoadMergeCommand.self])
}

struct LoadSetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "setup", abstract: "Create a study and N participants; write their credentials as JSON.")

    @Option(help: "Mock server URL.") var server: String
    @Option(help: "How many participants.") var participants = 1000
    @Option(help: "Study scheduling: server or device.") var scheduling = "device"
    @Flag(help: "Give each participant its own RSA key (slow).") var perParticipantKeys = false
    @Option(help: "Where to write the credentials (JSON).") var out = "load-participants.json"

    func validate() throws {
        guard participants > 0 else { throw ValidationError("--participants must be positive") }
        guard ["server", "device"].contains(scheduling) else { throw ValidationError("--scheduling must be server or device") }
    }

    func run() async throws {
        let http = TransportClient(configuration: .init(defaultTimeout: .seconds(600)))
        defer { http.shutdown() }
        let started = ContinuousClock.now
        let result = try await LoadSetup.run(server: server, participants: participants, scheduling: scheduling,
                                             perParticipantKeys: perParticipantKeys, http: http)
        let seconds = (ContinuousClock.now - started).seconds
        try WireJSON.encode(result).write(to: URL(fileURLWithPath: out))
        print(String(format: "study %@: %d participants in %.2f s (%.0f participants/s) → %@", result.studyID ?? "-", participants, seconds,
                     Double(participants) / seconds, out))
    }
}

struct LoadRegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Virtual devices register (and optionally get a relay token and download surveys); prints a line per second and a final table.",
        discussion: """
            Exit codes: 0 thresholds passed, 99 a threshold or the correctness pass failed, 2 the participants could not be read \
            or the server not reached, 64 bad flags.
            """)

    @Option(help: "Server URL; repeat it for a deployment of several instances (iterations go to them in turn).") var server: [String]
    @Option(help: "Relay URL: each iteration first gets a token from it.") var relay: String?
    @Option(help: "Credentials file written by `load setup`.") var participantsFile: String?
    @Option(help: "Create a study with this many participants first (needs the mock server's admin API).") var setup: Int?
    @Option(help: "Open model: starts per second.") var rate: Double?
    @Option(help: "Open model: a ramp like 0:100/s,30s:2000/s.") var ramp: String?
    @Option(help: "Closed model: this many devices looping.") var concurrency: Int?
    @Option(help: "Open model: starts in flight at most; further starts are dropped and counted.") var maxInFlight = 1000
    @Option(help: "Open model: starts due within one tick go out together at its end, e.g. 1ms (each at most this late, counted in its latency): one wake-up a tick instead of one a start. 0 = each at its own time.")
    var pacingTick = "0"
    @Option(help: "Measured time, e.g. 30s.") var duration = "10s"
    @Option(help: "Time before measuring starts, e.g. 2s.") var warmup = "0s"
    @Option(help: "HTTP client of the iterations: nio (event loops, one per core, as wrk) or curl (libcurl, as the SDK).")
    var httpClient = "nio"
    @Flag(help: "Download the survey list after registering.") var download = false
    @Flag(help: "Register on the /ios paths.") var ios = false
    @Flag(help: "Baseline: only GET /__admin/health per iteration (compare a server's registration rate with its request overhead).")
    var healthOnly = false
    @Option(help: "Write the JSON report here.") var report: String?
    @Option(name: .customLong("threshold"), help: """
        A pass/fail rule: p99<25ms, p50<=5ms, max<1s, errors<0.1%, rate>1000/s; a step's latency as register.p99<50ms \
        (steps: relay_token, register, download). Repeatable.
        """)
    var thresholds: [String] = []
    @Option(help: "Correctness pass: auto (only where GET /__admin/health answers 200), on, off.") var verify = "auto"
    @Option(help: "Write a self-contained HTML report (charts as inline SVG) here.") var html: String?
    @Option(help: "Use only the I-th of N disjoint slices of the participants, e.g. 2/4 (one slice per machine).") var shard: String?
    @Option(help: "Per-request timeout, e.g. 30s.") var timeout = "30s"
    @Option(name: .customLong("header"), help: "An extra header on every request, 'Name: value' (a gateway's key, a token). Repeatable.")
    var headers: [String] = []
    @Option(help: "Time zones the participants register in, spread over them in turn, e.g. America/Chicago,Europe/Berlin (default America/New_York).")
    var timezones: String?

    /// Every option as given or defaulted, for the report.
    var recorded: [String: String] {
        var options: [String: String] = ["server": server.joined(separator: ","), "duration": duration, "warmup": warmup,
                                         "max-in-flight": String(maxInFlight), "download": String(download), "ios": String(ios),
                                         "health-only": String(healthOnly), "verify": verify, "timeout": timeout, "http-client": httpClient,
                                         "pacing-tick": pacingTick]
        if let relay { options["relay"] = relay }
        if let participantsFile { options["participants-file"] = participantsFile }
        if let setup { options["setup"] = String(setup) }
        if let rate { options["rate"] = String(rate) }
        if let ramp { options["ramp"] = ramp }
        if let concurrency { options["concurrency"] = String(concurrency) }
        if let shard { options["shard"] = shard }
        if !thresholds.isEmpty { options["threshold"] = thresholds.joined(separator: " ") }
        // Header names only: their values may be secrets.
        if !headers.isEmpty { options["header"] = headers.map { String($0.prefix { $0 != ":" }) }.joined(separator: ",") }
        if let timezones { options["timezones"] = timezones }
        return options
    }

    func run() async throws {
        let durationValue: Duration, warmupValue: Duration, parsedThresholds: [Threshold], model: RegisterLoadOptions.Model
        let verifyMode: RegisterLoadOptions.Verify, timeoutValue: Duration, client: LoadClient, tick: Duration
        let extraHeaders: [(name: String, value: String)], zones: [String]
        do {
            extraHeaders = try headers.map(RegisterLoadOptions.header(parsing:))
            zones = try RegisterLoadOptions.zones(parsing: timezones)
            tick = try parsePacingTick(pacingTick)
            guard let chosen = LoadClient(rawValue: httpClient) else { throw LoadUsageError(flag: "--http-client", message: "must be nio or curl") }
            client = chosen
            guard !server.isEmpty else { throw LoadUsageError(flag: "--server", message: "give at least one") }
            guard let mode = RegisterLoadOptions.Verify(rawValue: verify) else { throw LoadUsageError(flag: "--verify", message: "auto, on or off") }
            verifyMode = mode
            timeoutValue = try parseDuration(timeout, flag: "--timeout")
            guard timeoutValue > .zero else { throw LoadUsageError(flag: "--timeout", message: "must be positive") }
            if let shard { _ = try LoadMerge.shard([Int](), shard) }
            durationValue = try parseDuration(duration, flag: "--duration")
            warmupValue = try parseDuration(warmup, flag: "--warmup")
            parsedThresholds = try thresholds.map { try Threshold(parsing: $0) }
            let given = [rate != nil, ramp != nil, concurrency != nil].filter { $0 }.count
            guard given <= 1 else { throw LoadUsageError(flag: "--rate/--ramp/--concurrency", message: "choose one load model") }
            if let concurrency {
                guard concurrency > 0 else { throw LoadUsageError(flag: "--concurrency", message: "must be positive") }
                guard tick == .zero else {
                    throw LoadUsageError(flag: "--pacing-tick", message: "paces the open model (--rate or --ramp), not --concurrency")
                }
                model = .closed(concurrency: concurrency)
            } else {
                guard maxInFlight > 0 else { throw LoadUsageError(flag: "--max-in-flight", message: "must be positive") }
                let schedule = try ramp.map { try RateSchedule(parsing: $0) } ?? RateSchedule(constant: rate ?? 100)
                guard schedule.points.contains(where: { $0.rate > 0 }) else { throw LoadUsageError(flag: "--rate", message: "must be positive") }
                model = .open(schedule, maxInFlight: maxInFlight)
            }
            guard (participantsFile == nil) != (setup == nil) else {
                throw LoadUsageError(flag: "--participants-file/--setup", message: "give exactly one")
            }
        } catch let error as LoadUsageError {
            throw ValidationError(error.description)
        }

        let http = TransportClient(configuration: .init(defaultTimeout: timeoutValue, connectTimeout: .seconds(5)))
        defer { http.shutdown() }
        var credentials: LoadSetup.Result
        do {
            if let file = participantsFile {
                credentials = try WireJSON.decode(LoadSetup.Result.self, from: Data(contentsOf: URL(fileURLWithPath: file)))
            } else {
                credentials = try await LoadSetup.run(server: server[0], participants: setup ?? 0, scheduling: "device", perParticipantKeys: false, http: http)
            }
            if let shard { credentials.participants = try LoadMerge.shard(credentials.participants, shard) }
        } catch {
            FileHandle.standardError.write(Data("load: cannot get participants: \(error)\n".utf8))
            throw ExitCode(2)
        }
        var options = RegisterLoadOptions(server: server[0], relay: relay, participants: credentials.participants, studyID: credentials.studyID,
                                          model: model, duration: durationValue, warmup: warmupValue, download: download, ios: ios)
        options.servers = server
        options.healthOnly = healthOnly
        options.verify = verifyMode
        options.timeout = timeoutValue
        options.recordedOptions = recorded
        options.client = client
        options.pacingTick = tick
        options.headers = extraHeaders
        options.timeZones = zones
        for warning in RegisterLoad.warnings(options) { FileHandle.standardError.write(Data("load: warning: \(warning)\n".utf8)) }
        var result = try await RegisterLoad.run(options, http: http) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        for threshold in parsedThresholds { result.thresholds[threshold.text] = threshold.passes(result) }
        print(result.table())
        if let report { try WireJSON.encode(result).write(to: URL(fileURLWithPath: report)) }
        if let html { try Data(LoadHTML.render(result).utf8).write(to: URL(fileURLWithPath: html)) }
        if result.totals.succeeded == 0 && result.totals.failed > 0 && result.errors.keys.allSatisfy({ $0.hasPrefix("transport:") }) {
            FileHandle.standardError.write(Data("load: the server could not be reached\n".utf8))
            throw ExitCode(2)
        }
        if result.correct == false { throw ExitCode(99) }
        if result.thresholds.values.contains(false) { throw ExitCode(99) }
    }
}

struct LoadPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Simulated devices hold event streams to the relay while pushes go to its provider API at a rate; reports delivery latency and losses.",
        discussion: """
            Latency runs from each push's intended send time (open model) to its receipt on the device's stream. A push the relay \
            accepted but no device received within --grace after the last send is lost. Exit codes: 0 pass, 99 a threshold \
            failed or pushes were lost or duplicated, 2 the relay could not be reached, 64 bad flags.
            """)

    @Option(help: "Relay URL. Repeat for several relays (each with its own push-relay --node-id): devices are spread over them and each push goes to the relay that issued its token.")
    var relay: [String] = []
    @Option(help: "Simulated devices (each one token and one stream).") var devices = 100
    @Option(help: "android (FCM-style messages:send) or ios (APNs-style /3/device).") var platform = "android"
    @Option(help: "Pushes per second.") var rate: Double?
    @Option(help: "A ramp like 0:100/s,30s:2000/s.") var ramp: String?
    @Option(help: "Sends in flight at most; further sends are dropped and counted.") var maxInFlight = 1000
    @Option(help: "Sends due within one tick go out together at its end, e.g. 1ms (each at most this late, counted in its latency): one wake-up a tick instead of one a send. 0 = each at its own time.")
    var pacingTick = "0"
    @Option(help: "Measured time, e.g. 30s.") var duration = "10s"
    @Option(help: "Time before measuring starts, e.g. 2s.") var warmup = "0s"
    @Option(help: "HTTP client of the sends, acks and streams: nio (event loops, one per core, as wrk) or curl (libcurl, as the SDK).")
    var httpClient = "nio"
    @Option(help: "Wait this long after the last send for deliveries before counting the rest lost.") var grace = "5s"
    @Option(help: "Spread device streams over this many local addresses 127.0.0.2, 127.0.0.3, ... (0 = system's choice).")
    var sourceAddresses = 0
    @Option(help: "After a stream ends, a device waits up to this long (random) before reconnecting.") var reconnectJitter = "1s"
    @Option(help: "Write the JSON report here.") var report: String?
    @Option(name: .customLong("threshold"), help: "A pass/fail rule: p99<50ms, errors<0.1%, rate>1000/s. Repeatable.")
    var thresholds: [String] = []
    @Option(help: "Write a self-contained HTML report (charts as inline SVG) here.") var html: String?

    /// The flags as given, kept in the report (`run.options`) so a run can be repeated from it.
    var recorded: [String: String] {
        var options: [String: String] = ["relay": relay.joined(separator: ","), "devices": String(devices), "platform": platform,
                                         "max-in-flight": String(maxInFlight), "duration": duration, "warmup": warmup, "grace": grace,
                                         "source-addresses": String(sourceAddresses), "reconnect-jitter": reconnectJitter,
                                         "http-client": httpClient, "pacing-tick": pacingTick]
        if let rate { options["rate"] = String(rate) }
        if let ramp { options["ramp"] = ramp }
        if !thresholds.isEmpty { options["threshold"] = thresholds.joined(separator: " ") }
        return options
    }

    func run() async throws {
        let options: PushLoadOptions, parsedThresholds: [Threshold]
        do {
            guard devices > 0 else { throw LoadUsageError(flag: "--devices", message: "must be positive") }
            guard let firstRelay = relay.first else { throw LoadUsageError(flag: "--relay", message: "is required") }
            guard ["android", "ios"].contains(platform) else { throw LoadUsageError(flag: "--platform", message: "must be android or ios") }
            guard rate == nil || ramp == nil else { throw LoadUsageError(flag: "--rate/--ramp", message: "choose one") }
            guard maxInFlight > 0 else { throw LoadUsageError(flag: "--max-in-flight", message: "must be positive") }
            let schedule = try ramp.map { try RateSchedule(parsing: $0) } ?? RateSchedule(constant: rate ?? 100)
            guard schedule.points.contains(where: { $0.rate > 0 }) else { throw LoadUsageError(flag: "--rate", message: "must be positive") }
            parsedThresholds = try thresholds.map { try Threshold(parsing: $0) }
            guard (0...250).contains(sourceAddresses) else { throw LoadUsageError(flag: "--source-addresses", message: "must be 0-250") }
            var built = PushLoadOptions(relay: firstRelay, devices: devices, platform: platform, rate: schedule,
                                        duration: try parseDuration(duration, flag: "--duration"), warmup: try parseDuration(warmup, flag: "--warmup"),
                                        grace: try parseDuration(grace, flag: "--grace"), maxInFlight: maxInFlight,
                                        moreRelays: Array(relay.dropFirst()))
            built.sourceAddresses = (0..<sourceAddresses).map { "127.0.0.\($0 + 2)" }
            built.reconnectJitter = reconnectJitter == "0" ? .zero : try parseDuration(reconnectJitter, flag: "--reconnect-jitter")
            built.recordedOptions = recorded
            guard let client = LoadClient(rawValue: httpClient) else { throw LoadUsageError(flag: "--http-client", message: "must be nio or curl") }
            built.client = client
            built.pacingTick = try parsePacingTick(pacingTick)
            options = built
        } catch let error as LoadUsageError {
            throw ValidationError(error.description)
        }
        let http = TransportClient(configuration: .init(defaultTimeout: .seconds(30), connectTimeout: .seconds(5)))
        defer { http.shutdown() }
        var result: LoadReport
        do {
            result = try await PushLoad.run(options, http: http) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        } catch {
            // Setup failed: the relay is unreachable or refused to create devices.
            let reason = error is TransportError ? "the relay could not be reached: \(error)" : "\(error)"
            FileHandle.standardError.write(Data("load: \(reason)\n".utf8))
            throw ExitCode(2)
        }
        for threshold in parsedThresholds { result.thresholds[threshold.text] = threshold.passes(result) }
        print(result.table())
        if let report { try WireJSON.encode(result).write(to: URL(fileURLWithPath: report)) }
        if let html { try Data(LoadHTML.render(result).utf8).write(to: URL(fileURLWithPath: html)) }
        if result.correct == false || result.thresholds.values.contains(false) { throw ExitCode(99) }
    }
}

struct LoadMergeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Combine the reports of several machines or shards that ran at the same time into one.",
        discussion: """
            Histograms are added exactly (HdrHistogram encoding in each report), per-second rows aligned by wall clock, \
            counts and throughputs summed, correctness combined. Exit codes: 0 pass, 99 a threshold or correctness failed, \
            2 a report could not be read or merged, 64 bad flags.
            """)

    @Argument(help: "Reports written by load register --report (or load push --report).") var reports: [String]
    @Option(help: "Write the merged JSON report here.") var report: String?
    @Option(help: "Write a self-contained HTML report of the merged run (each shard's completions drawn too) here.") var html: String?
    @Option(name: .customLong("threshold"), help: "A pass/fail rule on the merged report (as for load register). Repeatable.")
    var thresholds: [String] = []

    func validate() throws {
        guard !reports.isEmpty else { throw ValidationError("give at least one report") }
        for threshold in thresholds {
            do { _ = try Threshold(parsing: threshold) } catch { throw ValidationError("\(error)") }
        }
    }

    func run() async throws {
        var loaded: [LoadReport] = []
        for path in reports {
            do {
                loaded.append(try WireJSON.decode(LoadReport.self, from: Data(contentsOf: URL(fileURLWithPath: path))))
            } catch {
                FileHandle.standardError.write(Data("load merge: cannot read \(path): \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        var merged: LoadReport
        do { merged = try LoadMerge.merge(loaded) } catch {
            FileHandle.standardError.write(Data("load merge: \(error)\n".utf8))
            throw ExitCode(2)
        }
        for rule in thresholds {
            let threshold = try Threshold(parsing: rule)
            merged.thresholds[threshold.text] = threshold.passes(merged)
        }
        print(merged.table())
        if let report { try WireJSON.encode(merged).write(to: URL(fileURLWithPath: report)) }
        if let html { try Data(LoadHTML.render(merged, shards: loaded).utf8).write(to: URL(fileURLWithPath: html)) }
        if merged.correct == false || merged.thresholds.values.contains(false) { throw ExitCode(99) }
    }
}
