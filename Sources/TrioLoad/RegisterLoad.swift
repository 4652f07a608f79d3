import Foundation
import TrioTesting
import Synchronization
import SurveyCrypto
import SurveyWire
import Transport

/// How a registration load run is driven.
public struct RegisterLoadOptions: Sendable {
    /// How iterations are started (the engine's models, as `load push` uses them too).
    public typealias Model = LoadModel

    /// The correctness pass: `auto` makes it only where `GET /__admin/health` answers 200 (the trio's server).
    public enum Verify: String, Sendable, CaseIterable { case auto, on, off }

    /// Target servers; iterations go to them in turn (one deployment run as several instances).
    public var servers: [String]
    /// The first target server.
    public var server: String { servers[0] }
    /// When set, every iteration first gets a token from this relay (as a real device does).
    public var relay: String?
    /// Credentials the iterations register with, in turn.
    public var participants: [AdminWire.Credentials]
    /// The study of the participants, when known (the report names it; verification does not need it).
    public var studyID: String?
    /// Closed or open.
    public var model: Model
    /// The measured window.
    public var duration: Duration
    /// Time run before the window opens, not counted.
    public var warmup: Duration
    /// Also download the survey list after registering.
    public var download: Bool
    /// The `timezone` each registration sends (`timeZones`, when given, spreads the participants over several).
    public var timeZone: String
    /// `--timezones`: participant `i` registers in zone `i mod n` (empty: every one in ``timeZone``).
    public var timeZones: [String] = []
    /// `--header`: extra headers every request of an iteration carries (a gateway's key, an auth token).
    public var headers: [(name: String, value: String)] = []
    /// Register as iOS devices (the `/ios` route variants) instead of Android.
    public var ios: Bool
    /// Only `GET /__admin/health` per iteration: the same tool's baseline for a server's request overhead.
    public var healthOnly = false
    /// Whether to make the correctness pass after the run.
    public var verify = Verify.auto
    /// Every option as given, for the report.
    public var recordedOptions: [String: String] = [:]
    /// The HTTP client's per-request timeout (recorded in the report).
    public var timeout: Duration?
    /// The HTTP client the iterations use (the `http` given to ``RegisterLoad/run(_:http:progress:)`` still makes the
    /// set-up and the correctness pass, and serves https targets).
    public var client = LoadClient.nio
    /// `--pacing-tick` (open model): starts due within one tick go out together at its end (each at most this late,
    /// counted in its latency); zero starts each at its own time.
    public var pacingTick: Duration = .zero

    /// Options for one server, with defaults for the rest.
    public init(server: String, relay: String? = nil, participants: [AdminWire.Credentials], studyID: String? = nil, model: Model,
                duration: Duration, warmup: Duration = .zero, download: Bool = false, timeZone: String = "America/New_York", ios: Bool = false) {
        self.servers = [server]
        self.relay = relay
        self.participants = participants
        self.studyID = studyID
        self.model = model
        self.duration = duration
        self.warmup = warmup
        self.download = download
        self.timeZone = timeZone
        self.ios = ios
    }

    /// The zone participant `index` registers in: `timeZones` in turn, else ``timeZone``.
    public func zone(forParticipant index: Int) -> String {
        timeZones.isEmpty ? timeZone : timeZones[index % timeZones.count]
    }

    /// In-flight requests the model allows at most (the closed model's devices, the open model's limit).
    public var maxConcurrent: Int {
        switch model {
        case .open(_, let maxInFlight): maxInFlight
        case .closed(let concurrency): concurrency
        }
    }
}

/// The registration plug-in: iteration `i` registers participant `i mod n` on server `i mod m`, and remembers who
/// registered (what the correctness pass asks the server about).
final class RegisterPlugin: LoadPlugin {
    let options: RegisterLoadOptions
    let http: any HTTPTransport
    let registered = Mutex<Set<String>>([])
    /// The first body of each kind of error (``LoadReport/errorSamples``).
    let samples = Mutex<[String: String]>([:])
    /// Each participant's hashed password, computed once (as a device does) rather than per iteration.
    let hashes: [String]
    /// Each participant's `/register_user` form without its `device_id` (which names the iteration), encoded once.
    /// Empty with a relay: the token in the form is a new one at every iteration.
    let forms: [String]

    init(options: RegisterLoadOptions, http: any HTTPTransport) {
        self.options = options
        self.http = http
        hashes = options.healthOnly ? [] : options.participants.map { BeiwePassword.deviceHash($0.password) }
        forms = options.healthOnly || options.relay != nil ? [] : zip(options.participants, hashes).enumerated().map { index, pair in
            RegisterLoad.registrationForm(who: pair.0, passwordHash: pair.1, timeZone: options.zone(forParticipant: index),
                                          token: RegisterLoad.fixedToken(pair.0)).encoded()
        }
    }

    /// Keeps the first body of a kind of error (at most ``LoadReport/maxErrorSamples`` kinds, each clipped).
    func keepSample(_ kind: String, _ body: [UInt8]) {
        samples.withLock { kept in
            guard kept[kind] == nil, kept.count < LoadReport.maxErrorSamples else { return }
            kept[kind] = String(String(decoding: body.prefix(LoadReport.errorSampleLength * 4), as: UTF8.self).prefix(LoadReport.errorSampleLength))
        }
    }

    func iterate(_ index: Int, recorder: LoadRecorder) async -> IterationOutcome {
        let who = options.participants[index % options.participants.count]
        let server = options.servers[index % options.servers.count]
        let zone = options.zone(forParticipant: index % options.participants.count)
        let error = await RegisterLoad.registerDevice(options, server: server, http: http, who: who, index: index, timeZone: zone,
                                                      passwordHash: hashes.isEmpty ? nil : hashes[index % hashes.count],
                                                      encodedForm: forms.isEmpty ? nil : forms[index % forms.count],
                                                      step: { name, micros in recorder.step(name, micros: micros) },
                                                      sample: { kind, body in self.keepSample(kind, body) })
        guard let error else {
            registered.withLock { _ = $0.insert(who.patientID) }
            return .succeeded
        }
        return .failed(error)
    }
}

/// `survey-cli load register`: virtual devices registering with a PROTOCOL.md §1 server, measured like wrk2/k6.
public enum RegisterLoad {
    /// What one device does to join a study, as a real app would: a relay token when `options.relay` is set,
    /// `/register_user` (new password = the temporary one, so the same credentials can register again), and
    /// `/download_surveys` when `options.download` is set. Returns nil on success, else an error key
    /// (`register_user:403:invalid_credentials`, `transport:connect_failed`). `step` gets each step's latency (µs);
    /// `passwordHash`, when given, is `who`'s password as the device sends it (computed here otherwise);
    /// `encodedForm`, when given (only without a relay), is ``registrationForm(who:passwordHash:timeZone:token:)``
    /// already encoded, to which the iteration's `device_id` is appended.
    public static func registerDevice(_ options: RegisterLoadOptions, server: String? = nil, http: any HTTPTransport, who: AdminWire.Credentials,
                                      index: Int, timeZone: String, passwordHash: String? = nil, encodedForm: String? = nil,
                                      step: @Sendable (String, UInt64) -> Void = { _, _ in },
                                      sample: @Sendable (String, [UInt8]) -> Void = { _, _ in }) async -> String? {
        let server = server ?? options.server
        let suffix = options.ios ? "/ios" : ""
        func with(_ request: TransportRequest) -> TransportRequest {
            var request = request
            request.headers += options.headers
            return request
        }
        func timed<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
            let began = ContinuousClock.now
            let result = try await body()
            step(name, UInt64(max(1, (ContinuousClock.now - began).seconds * 1_000_000)))
            return result
        }
        do {
            if options.healthOnly {
                let response = try await http.send(with(TransportRequest(url: server + "/__admin/health")))
                return response.status == 200 ? nil : "health:\(response.status)"
            }
            let hashed = passwordHash ?? BeiwePassword.deviceHash(who.password)
            var token = fixedToken(who)
            if let relay = options.relay {
                let response = try await timed("relay_token") {
                    try await http.send(with(.json(relay + "/v1/devices", body: RelayWire.DeviceRequest(platform: options.ios ? "ios" : "android", appID: "load"))))
                }
                guard response.status == 201, let t = try? response.decode(RelayWire.TokenResponse.self).token else {
                    return "relay_token:\(response.status)"
                }
                token = t
            }
            // The device id names the iteration: letters, digits and dashes, nothing to escape.
            let device = "&device_id=load-device-\(index)"
            let body: String
            if let encodedForm, options.relay == nil {
                body = encodedForm + device
            } else {
                body = registrationForm(who: who, passwordHash: hashed, timeZone: timeZone, token: token).encoded() + device
            }
            let registered = try await timed("register") { try await http.send(with(.form(server + "/register_user" + suffix, body))) }
            guard registered.status == 200 else {
                let kind = "register_user:\(registered.status)" + ((try? registered.decode(ErrorBody.self)).map { ":" + $0.error.code } ?? "")
                sample(kind, registered.body)
                return kind
            }
            // A 2xx that is not the JSON object the route answers (a gateway's HTML page, an empty body) is an error of
            // its own kind, not a success. Checked without building the answer's values: parsing it into a JSONValue
            // was 38 % of the tool's CPU per registration.
            guard (try? JSONParser.kind(of: registered.body)) == .object else {
                sample("register_user:not_json", registered.body)
                return "register_user:not_json"
            }
            if options.download {
                var list = FormBody()
                list["patient_id"] = who.patientID
                list["password"] = hashed
                list["device_id"] = "load-device-\(index)"
                let surveys = try await timed("download") { try await http.send(with(.form(server + "/download_surveys" + suffix, list.encoded()))) }
                guard surveys.status == 200 else {
                    sample("download_surveys:\(surveys.status)", surveys.body)
                    return "download_surveys:\(surveys.status)"
                }
                guard (try? JSONParser.kind(of: surveys.body)) == .array else {
                    sample("download_surveys:not_json", surveys.body)
                    return "download_surveys:not_json"
                }
            }
            return nil
        } catch let error as TransportError {
            return "transport:\(error.code)"
        } catch {
            return "tool:\(error)"
        }
    }

    /// The `fcm_token` a device registers with when no relay gives it one.
    static func fixedToken(_ who: AdminWire.Credentials) -> String { "load-\(who.patientID)" }

    /// A device's `/register_user` form but its `device_id`: the participant, the password as the device sends it, the
    /// new password (the temporary one, so the same credentials register again), the zone and the push token.
    public static func registrationForm(who: AdminWire.Credentials, passwordHash: String, timeZone: String, token: String) -> FormBody {
        var form = FormBody()
        form["patient_id"] = who.patientID
        form["password"] = passwordHash
        form["new_password"] = who.password
        form["phone_number"] = "NOT_SUPPLIED"
        form["timezone"] = timeZone
        form["fcm_token"] = token
        return form
    }

    /// Warnings about a run's set-up (printed before it starts).
    public static func warnings(_ options: RegisterLoadOptions) -> [String] {
        var result: [String] = []
        guard !options.healthOnly else { return result }
        let people = options.participants.count
        switch options.model {
        case .closed(let concurrency) where people < concurrency:
            result.append("only \(people) participants for \(concurrency) devices looping: the same participant will register twice at once "
                          + "(the real Beiwe server answers 500 to a second registration within one second)")
        case .open(let schedule, _):
            // What matters is how often one participant comes round: with fewer participants than starts a second,
            // each registers again within the second (whatever the in-flight limit).
            let peak = schedule.points.map(\.rate).max() ?? 0
            if Double(people) < peak {
                result.append("only \(people) participants for up to \(Int(peak)) starts a second: each participant registers again within "
                              + "a second (the real Beiwe server answers 500 to a second registration within one second); give at least "
                              + "\(Int(peak.rounded(.up))) participants")
            }
        default:
            break
        }
        return result
    }

    /// Runs the load and returns the report (thresholds are evaluated by the caller).
    public static func run(_ options: RegisterLoadOptions, http: TransportClient, progress: @escaping @Sendable (String) -> Void) async throws -> LoadReport {
        guard !options.participants.isEmpty else { throw LoadUsageError(flag: "--participants-file", message: "no participants to register") }
        guard !options.servers.isEmpty else { throw LoadUsageError(flag: "--server", message: "give at least one server") }
        let cpuBefore = ProcessCPU.seconds()
        let wallStart = Date()
        let loops = options.client.make(maxConnectionsPerHost: max(64, options.maxConcurrent), timeout: options.timeout, fallback: http)
        let plugin = RegisterPlugin(options: options, http: loops ?? http)
        var engine = LoadEngine(model: options.model, warmup: options.warmup, duration: options.duration)
        engine.loops = loops?.executors ?? []
        engine.pacingTick = options.pacingTick
        let outcome = await engine.run(plugin, progress: progress)
        let registered = plugin.registered.withLock { $0 }
        // The check's requests go through the loops too, its lanes running on them, while they run.
        let (correct, correctness) = options.healthOnly ? (nil, "not checked (health baseline)")
            : await verify(options, http: loops ?? http, on: loops?.executors ?? [], registered: registered, since: wallStart)
        await loops?.shutdown()
        var report = outcome.report(scenario: options.healthOnly ? "health"
                                        : "register" + (options.relay == nil ? "" : "+relay_token") + (options.download ? "+download_surveys" : ""),
                                    target: options.servers.joined(separator: ","), correct: correct, correctness: correctness)
        report.run = .here(measuredFrom: wallStart.addingTimeInterval(options.warmup.seconds), options: options.recordedOptions,
                           participants: options.participants.count, timeout: options.timeout,
                           cpuSeconds: ProcessCPU.seconds() - cpuBefore, iterations: outcome.state.begun)
        let samples = plugin.samples.withLock { $0 }
        report.errorSamples = samples.isEmpty ? nil : samples
        return report
    }

    /// The correctness pass: every participant this run registered has a `last_registered_at` inside the run on the
    /// server (`GET /__admin/participants/{id}`). `auto` makes it only where `/__admin/health` answers 200. Its lanes
    /// run on `executors` in turn (the loop client's loops), when there are any.
    static func verify(_ options: RegisterLoadOptions, http: any HTTPTransport, on executors: [any TaskExecutor] = [], registered: Set<String>, since: Date) async -> (Bool?, String) {
        if options.verify == .off { return (nil, "not checked (--verify off)") }
        let admin = options.server + "/__admin"
        let health: Int?
        do {
            health = try await http.send(TransportRequest(url: admin + "/health")).status
        } catch {
            // Unreachable is not "no admin API": say which.
            let reason = "\(options.server) could not be reached for the correctness pass (\(error))"
            return options.verify == .auto ? (nil, "skipped: " + reason) : (false, "--verify on, but " + reason)
        }
        guard health == 200 else {
            if options.verify == .auto {
                return (nil, "skipped: \(options.server) has no admin API (GET /__admin/health did not answer 200); --verify on requires one")
            }
            return (false, "--verify on, but \(options.server) has no admin API (GET /__admin/health did not answer 200)")
        }
        // One second of slack for clocks that tick apart (the tool and the server read their own clocks).
        let from = since.addingTimeInterval(-1)
        let ids = Array(registered)
        let lanes = 16
        let (ok, examples) = await withTaskGroup(of: (Int, [String]).self) { group in
            for lane in 0..<lanes {
                group.addTask(executorPreference: executors.isEmpty ? nil : executors[lane % executors.count]) {
                    var confirmed = 0
                    var problems: [String] = []
                    var i = lane
                    while i < ids.count {
                        let id = ids[i]
                        i += lanes
                        do {
                            let response = try await http.send(TransportRequest(url: admin + "/participants/" + id))
                            let view = try response.decode(AdminWire.Participant.self)
                            if let at = view.lastRegisteredAt.flatMap(WireTime.parse), at >= from {
                                confirmed += 1
                            } else {
                                problems.append("\(id): last registered \(view.lastRegisteredAt ?? "never")")
                            }
                        } catch {
                            problems.append("\(id): \(error)")
                        }
                    }
                    return (confirmed, problems)
                }
            }
            var total = 0
            var examples: [String] = []
            for await (confirmed, problems) in group {
                total += confirmed
                examples += problems.prefix(5 - min(5, examples.count))
            }
            return (total, examples)
        }
        let text = "\(ok) of \(ids.count) participants the tool registered show a registration during this run on the server"
            + (examples.isEmpty ? "" : " (e.g. \(examples.joined(separator: "; ")))")
        return (ok == ids.count, text)
    }
}

/// `survey-cli load setup`: a study and its participants, created through the admin API.
public enum LoadSetup {
    /// A participants file: the server, the study and the credentials.
    public struct Result: Codable, Sendable {
        /// The server the participants were created on.
        public var server: String?
        /// Optional: a participants file for a server the trio did not set up need not name a study.
        public var studyID: String?
        /// Credentials the iterations register with, in turn.
        public var participants: [AdminWire.Credentials]
        enum CodingKeys: String, CodingKey { case server, studyID = "study_id", participants }
        /// Creates the value from its fields.
        public init(server: String?, studyID: String?, participants: [AdminWire.Credentials]) {
            self.server = server
            self.studyID = studyID
            self.participants = participants
        }
    }

    /// Creates a study (`server` or `device` scheduling) and `participants` participants on `server`.
    public static func run(server: String, participants: Int, scheduling: String, perParticipantKeys: Bool, http: TransportClient) async throws -> Result {
        // Said before anything else: a server that cannot be reached, and one without the trio's admin API, each for what it is.
        let health: TransportResponse
        do {
            health = try await http.send(TransportRequest(url: server + "/__admin/health"))
        } catch {
            throw LoadUsageError(flag: "--server", message: "\(server) could not be reached: \(error)")
        }
        guard health.status == 200 else {
            throw LoadUsageError(flag: "--setup", message: "\(server) has no admin API (GET /__admin/health answered \(health.status)): --setup "
                                 + "makes participants through the trio's mock server; for another server, give --participants-file with "
                                 + "{\"participants\": [{\"patient_id\", \"password\"}]}")
        }
        let admin = AdminClient(baseURL: server, http: http)
        let study = try await admin.createStudy(.init(name: "load \(WireTime.format(Date()))", scheduling: scheduling,
                                                      perParticipantKeys: perParticipantKeys))
        var created: [AdminWire.Credentials] = []
        while created.count < participants {
            created += try await admin.createParticipants(study: study.studyID, .init(count: min(10_000, participants - created.count)))
        }
        return Result(server: server, studyID: study.studyID, participants: created)
    }
}

extension RegisterLoadOptions {
    /// `--header 'Name: value'`: a token name (no spaces, no control characters) and a value without line breaks.
    public static func header(parsing text: String) throws(LoadUsageError) -> (name: String, value: String) {
        guard let colon = text.firstIndex(of: ":") else {
            throw LoadUsageError(flag: "--header", message: "'\(text)' is not 'Name: value'")
        }
        let name = String(text[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        let token = name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 32 && $0.value < 127 && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains($0) }
        guard !name.isEmpty, token else { throw LoadUsageError(flag: "--header", message: "'\(name)' is not a header name") }
        guard !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
            throw LoadUsageError(flag: "--header", message: "the value of \(name) has a line break")
        }
        guard !["host", "content-length", "transfer-encoding", "connection"].contains(name.lowercased()) else {
            throw LoadUsageError(flag: "--header", message: "\(name) is set by the load tool")
        }
        return (name, value)
    }

    /// `--timezones Z1,Z2,...`: tz database names (nil: none given).
    public static func zones(parsing text: String?) throws(LoadUsageError) -> [String] {
        guard let text else { return [] }
        let zones = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !zones.isEmpty else { throw LoadUsageError(flag: "--timezones", message: "give one or more tz database names") }
        for zone in zones where TimeZone(identifier: zone) == nil {
            throw LoadUsageError(flag: "--timezones", message: "'\(zone)' is not a tz database name")
        }
        return zones
    }
}

