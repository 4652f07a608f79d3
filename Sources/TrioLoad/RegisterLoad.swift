import Foundation
import TrioTesting
import Histogram
import Synchronization
import SurveyCrypto
import SurveyWire
import Transport

/// How a registration load run is driven.
public struct RegisterLoadOptions: Sendable {
    /// How iterations are started.
    public enum Model: Sendable {
        /// Starts arrive on a schedule whatever the server does (latency counted from the intended start).
        case open(RateSchedule, maxInFlight: Int)
        /// A fixed number of virtual devices, each starting its next iteration when the last ended.
        case closed(concurrency: Int)
    }

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
    /// The `timezone` each registration sends.
    public var timeZone: String
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

    /// In-flight requests the model allows at most (the closed model's devices, the open model's limit).
    public var maxConcurrent: Int {
        switch model {
        case .open(_, let maxInFlight): maxInFlight
        case .closed(let concurrency): concurrency
        }
    }
}

/// Collects results from many concurrent iterations. Latency is measured from each iteration's intended start and
/// binned by the second it completed in; an iteration counts as measured when it was meant to start inside the window.
final class LoadRecorder: Sendable {
    struct State {
        var overall = HistogramCodec.make()
        /// Since the last progress line.
        var interval = HistogramCodec.make()
        var seconds: [Int: LoadReport.SecondBucket] = [:]
        var startedPerSecond: [Int: Int] = [:]
        var steps: [String: Histogram<UInt64>] = [:]
        var errors: [String: Int] = [:]
        var started = 0, succeeded = 0, failed = 0, dropped = 0, late = 0, inFlight = 0
        /// Successes that completed inside the measured window.
        var completedInWindow = 0
        /// Every participant that registered successfully during the run (warm-up included): what the server must show.
        var registered: Set<String> = []
        var iterations = 0
    }
    let state = Mutex(State())

    func begin(measured: Bool, late: Bool, second: Int) {
        state.withLock { s in
            s.inFlight += 1
            if measured {
                s.started += 1
                s.startedPerSecond[second, default: 0] += 1
                if late { s.late += 1 }
            }
        }
    }

    func drop(measured: Bool) { state.withLock { if measured { $0.dropped += 1 } } }

    func inFlight() -> Int { state.withLock { $0.inFlight } }

    func step(_ name: String, micros: UInt64) {
        state.withLock { s in
            _ = s.steps[name, default: HistogramCodec.make()].record(max(1, micros))
        }
    }

    func end(measured: Bool, completedSecond: Int, inWindow: Bool, micros: UInt64, patientID: String, error: String?) {
        state.withLock { s in
            s.inFlight -= 1
            s.iterations += 1
            if error == nil { s.registered.insert(patientID) }
            guard measured else { return }
            let value = max(1, micros)
            _ = s.overall.record(value)
            _ = s.interval.record(value)
            // Mutated in place: a copy of the bucket out of the dictionary and back would copy its histogram's
            // counts (tens of kilobytes) on every completion.
            _ = s.seconds[completedSecond, default: (HistogramCodec.make(), 0, 0)].histogram.record(value)
            if let error {
                s.failed += 1
                s.seconds[completedSecond]!.failed += 1
                s.errors[error, default: 0] += 1
            } else {
                s.succeeded += 1
                s.seconds[completedSecond]!.ok += 1
                if inWindow { s.completedInWindow += 1 }
            }
        }
    }

    /// The progress numbers, and a fresh interval histogram.
    func progress() -> (ok: Int, failed: Int, inFlight: Int, interval: Histogram<UInt64>) {
        state.withLock { s in
            defer { s.interval = HistogramCodec.make() }
            return (s.succeeded, s.failed, s.inFlight, s.interval)
        }
    }
}

/// One run's shared pieces, handed to every iteration task.
final class LoadRun: Sendable {
    let options: RegisterLoadOptions
    let http: TransportClient
    let recorder: LoadRecorder
    let measuredFrom: ContinuousClock.Instant
    let windowEnd: ContinuousClock.Instant
    private let counter = Mutex(0)

    init(options: RegisterLoadOptions, http: TransportClient, recorder: LoadRecorder, measuredFrom: ContinuousClock.Instant,
         windowEnd: ContinuousClock.Instant) {
        self.options = options
        self.http = http
        self.recorder = recorder
        self.measuredFrom = measuredFrom
        self.windowEnd = windowEnd
    }

    /// Runs one iteration whose start was intended at `intended` and records it.
    func perform(intended: ContinuousClock.Instant) async {
        let index = counter.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        let who = options.participants[index % options.participants.count]
        let server = options.servers[index % options.servers.count]
        let error = await RegisterLoad.registerDevice(options, server: server, http: http, who: who, index: index, timeZone: options.timeZone,
                                                      step: { name, micros in self.recorder.step(name, micros: micros) })
        let now = ContinuousClock.now
        let micros = UInt64(max(0, (now - intended).seconds * 1_000_000))
        let completed = Int((now - measuredFrom).seconds.rounded(.down))
        recorder.end(measured: intended >= measuredFrom, completedSecond: max(0, completed), inWindow: now <= windowEnd, micros: micros,
                     patientID: who.patientID, error: error)
    }
}

/// `survey-cli load register`: virtual devices registering with a PROTOCOL.md §1 server, measured like wrk2/k6.
public enum RegisterLoad {
    static func ms(_ micros: UInt64) -> Double { LoadReport.ms(micros) }

    /// What one device does to join a study, as a real app would: a relay token when `options.relay` is set,
    /// `/register_user` (new password = the temporary one, so the same credentials can register again), and
    /// `/download_surveys` when `options.download` is set. Returns nil on success, else an error key
    /// (`register_user:403:invalid_credentials`, `transport:connect_failed`). `step` gets each step's latency (µs).
    public static func registerDevice(_ options: RegisterLoadOptions, server: String? = nil, http: TransportClient, who: AdminWire.Credentials,
                                      index: Int, timeZone: String,
                                      step: @Sendable (String, UInt64) -> Void = { _, _ in }) async -> String? {
        let server = server ?? options.server
        let suffix = options.ios ? "/ios" : ""
        func timed<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
            let began = ContinuousClock.now
            let result = try await body()
            step(name, UInt64(max(1, (ContinuousClock.now - began).seconds * 1_000_000)))
            return result
        }
        do {
            if options.healthOnly {
                let response = try await http.send(TransportRequest(url: server + "/__admin/health"))
                return response.status == 200 ? nil : "health:\(response.status)"
            }
            var token = "load-\(who.patientID)"
            if let relay = options.relay {
                let response = try await timed("relay_token") {
                    try await http.send(.json(relay + "/v1/devices", body: RelayWire.DeviceRequest(platform: options.ios ? "ios" : "android", appID: "load")))
                }
                guard response.status == 201, let t = try? response.decode(RelayWire.TokenResponse.self).token else {
                    return "relay_token:\(response.status)"
                }
                token = t
            }
            var form = FormBody()
            form["patient_id"] = who.patientID
            form["password"] = BeiwePassword.deviceHash(who.password)
            form["device_id"] = "load-device-\(index)"
            form["new_password"] = who.password
            form["phone_number"] = "NOT_SUPPLIED"
            form["timezone"] = timeZone
            form["fcm_token"] = token
            let registered = try await timed("register") { try await http.send(.form(server + "/register_user" + suffix, form.encoded())) }
            guard registered.status == 200 else {
                return "register_user:\(registered.status)" + ((try? registered.decode(ErrorBody.self)).map { ":" + $0.error.code } ?? "")
            }
            if options.download {
                var list = FormBody()
                list["patient_id"] = who.patientID
                list["password"] = BeiwePassword.deviceHash(who.password)
                list["device_id"] = "load-device-\(index)"
                let surveys = try await timed("download") { try await http.send(.form(server + "/download_surveys" + suffix, list.encoded())) }
                guard surveys.status == 200 else { return "download_surveys:\(surveys.status)" }
            }
            return nil
        } catch let error as TransportError {
            return "transport:\(error.code)"
        } catch {
            return "tool:\(error)"
        }
    }

    /// Warnings about a run's set-up (printed before it starts).
    public static func warnings(_ options: RegisterLoadOptions) -> [String] {
        var result: [String] = []
        if !options.healthOnly, options.participants.count < options.maxConcurrent {
            result.append("only \(options.participants.count) participants for up to \(options.maxConcurrent) iterations in flight: the same "
                          + "participant will register twice at once (the real Beiwe server answers 500 to a second registration "
                          + "within one second)")
        }
        return result
    }

    /// Runs the load and returns the report (thresholds are evaluated by the caller).
    public static func run(_ options: RegisterLoadOptions, http: TransportClient, progress: @escaping @Sendable (String) -> Void) async throws -> LoadReport {
        guard !options.participants.isEmpty else { throw LoadUsageError(flag: "--participants-file", message: "no participants to register") }
        guard !options.servers.isEmpty else { throw LoadUsageError(flag: "--server", message: "give at least one server") }
        let recorder = LoadRecorder()
        let cpuBefore = ProcessCPU.seconds()
        let wallStart = Date()
        let start = ContinuousClock.now
        let end = start + options.warmup + options.duration
        let measuredFrom = start + options.warmup
        let run = LoadRun(options: options, http: http, recorder: recorder, measuredFrom: measuredFrom, windowEnd: end)

        // One line a second, through the drain too: totals, this second's completions and their p50/p99, in flight.
        let reporter = Task {
            var last = (ok: 0, failed: 0)
            var elapsed = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if Task.isCancelled { break }
                elapsed += 1
                let p = recorder.progress()
                let phase = ContinuousClock.now > end ? " (drain)" : ""
                progress(String(format: "t=%3ds%@  ok %d (+%d/s)  failed %d (+%d)  in-flight %d  this second p50 %.2f ms  p99 %.2f ms",
                                elapsed, phase, p.ok, p.ok - last.ok, p.failed, p.failed - last.failed, p.inFlight,
                                ms(p.interval.valueAtPercentile(50)), ms(p.interval.valueAtPercentile(99))))
                last = (p.ok, p.failed)
            }
        }

        let modelName: String
        switch options.model {
        case .open(let schedule, let maxInFlight):
            modelName = "open"
            await withDiscardingTaskGroup { group in
                var t = 0.0
                let total = (options.warmup + options.duration).seconds
                while t < total {
                    let intended = start + .milliseconds(Int64(t * 1000))
                    try? await Task.sleep(until: intended, clock: .continuous)
                    // Cancelled: the run ends here with what it has (the cancelled sleep returned at once, and the
                    // rest of the schedule used to be fired in a burst).
                    if Task.isCancelled { break }
                    let measured = intended >= measuredFrom
                    let rate = schedule.rate(at: t)
                    if rate <= 0 { t += 0.01; continue }
                    if recorder.inFlight() >= maxInFlight {
                        recorder.drop(measured: measured)
                    } else {
                        recorder.begin(measured: measured, late: ContinuousClock.now - intended > .milliseconds(10),
                                       second: Int((intended - measuredFrom).seconds.rounded(.down)))
                        group.addTask { await run.perform(intended: intended) }
                    }
                    t += 1 / rate
                }
            }
        case .closed(let concurrency):
            modelName = "closed"
            await withDiscardingTaskGroup { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        while ContinuousClock.now < end, !Task.isCancelled {
                            let intended = ContinuousClock.now
                            recorder.begin(measured: intended >= measuredFrom, late: false,
                                           second: Int((intended - measuredFrom).seconds.rounded(.down)))
                            await run.perform(intended: intended)
                        }
                    }
                }
            }
        }
        reporter.cancel()
        let finished = ContinuousClock.now
        // A cancelled run's window is the part of it that ran (its report is partial, not diluted by time never run).
        let window = Task.isCancelled ? max(0.001, min(options.duration.seconds, (finished - measuredFrom).seconds))
            : max(0.001, options.duration.seconds)
        let s = recorder.state.withLock { $0 }
        let (correct, correctness) = options.healthOnly ? (nil, "not checked (health baseline)")
            : await verify(options, http: http, registered: s.registered, since: wallStart)
        let measuredTotal = s.succeeded + s.failed
        var report = LoadReport(
            scenario: options.healthOnly ? "health"
                : "register" + (options.relay == nil ? "" : "+relay_token") + (options.download ? "+download_surveys" : ""),
            model: modelName, target: options.servers.joined(separator: ","),
            totals: .init(started: s.started, succeeded: s.succeeded, failed: s.failed, dropped: s.dropped, late: s.late, seconds: window,
                          throughput: Double(s.completedInWindow) / window,
                          errorRate: measuredTotal == 0 ? 0 : Double(s.failed) / Double(measuredTotal),
                          offeredRate: Double(s.started) / window, completedInWindow: s.completedInWindow,
                          drainSeconds: max(0, (finished - end).seconds)),
            latencyMs: LoadReport.latency(s.overall),
            errors: s.errors,
            perSecond: LoadReport.rows(s.seconds, started: s.startedPerSecond),
            correct: correct, correctness: correctness, thresholds: [:])
        report.histogram = HistogramCodec.encode(s.overall)
        report.steps = s.steps.isEmpty ? nil : s.steps.mapValues(LoadReport.step)
        report.run = .here(measuredFrom: wallStart.addingTimeInterval(options.warmup.seconds), options: options.recordedOptions,
                           participants: options.participants.count, timeout: options.timeout,
                           cpuSeconds: ProcessCPU.seconds() - cpuBefore, iterations: s.iterations)
        return report
    }

    /// The correctness pass: every participant this run registered has a `last_registered_at` inside the run on the
    /// server (`GET /__admin/participants/{id}`). `auto` makes it only where `/__admin/health` answers 200.
    static func verify(_ options: RegisterLoadOptions, http: TransportClient, registered: Set<String>, since: Date) async -> (Bool?, String) {
        if options.verify == .off { return (nil, "not checked (--verify off)") }
        let admin = options.server + "/__admin"
        let healthy = (try? await http.send(TransportRequest(url: admin + "/health")).status) == 200
        guard healthy else {
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
                group.addTask {
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
