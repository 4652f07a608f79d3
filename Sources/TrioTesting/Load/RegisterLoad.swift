import Foundation
import Histogram
import Synchronization
import SurveyCrypto
import SurveyWire
import Transport

/// How a registration load run is driven.
public struct RegisterLoadOptions: Sendable {
    public enum Model: Sendable {
        /// Starts arrive on a schedule whatever the server does (latency counted from the intended start).
        case open(RateSchedule, maxInFlight: Int)
        /// A fixed number of virtual devices, each starting its next iteration when the last ended.
        case closed(concurrency: Int)
    }

    public var server: String
    /// When set, every iteration first gets a token from this relay (as a real device does).
    public var relay: String?
    public var participants: [AdminWire.Credentials]
    /// The study of the participants; enables the correctness pass against `/__admin/studies/{id}/stats`.
    public var studyID: String?
    public var model: Model
    public var duration: Duration
    public var warmup: Duration
    /// Also download the survey list after registering.
    public var download: Bool
    public var timeZone: String
    public var ios: Bool
    /// Only `GET /__admin/health` per iteration: the same tool's baseline for a server's request overhead.
    public var healthOnly = false

    public init(server: String, relay: String? = nil, participants: [AdminWire.Credentials], studyID: String? = nil, model: Model,
                duration: Duration, warmup: Duration = .zero, download: Bool = false, timeZone: String = "America/New_York", ios: Bool = false) {
        self.server = server
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
}

/// Collects results from many concurrent iterations.
final class LoadRecorder: Sendable {
    struct State {
        var overall = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        var seconds: [Int: LoadReport.SecondBucket] = [:]
        var errors: [String: Int] = [:]
        var started = 0, succeeded = 0, failed = 0, dropped = 0, late = 0, inFlight = 0
        var successIDs: Set<String> = []
    }
    let state = Mutex(State())

    func begin(measured: Bool, late: Bool) {
        state.withLock { s in
            s.inFlight += 1
            if measured { s.started += 1; if late { s.late += 1 } }
        }
    }

    func drop(measured: Bool) { state.withLock { if measured { $0.dropped += 1 } } }

    func inFlight() -> Int { state.withLock { $0.inFlight } }

    func end(measured: Bool, second: Int, micros: UInt64, patientID: String, error: String?) {
        state.withLock { s in
            s.inFlight -= 1
            guard measured else { return }
            _ = s.overall.record(max(1, micros))
            var bucket = s.seconds[second] ?? (Histogram<UInt64>(numberOfSignificantValueDigits: .two), 0, 0)
            _ = bucket.histogram.record(max(1, micros))
            if let error {
                s.failed += 1
                bucket.failed += 1
                s.errors[error, default: 0] += 1
            } else {
                s.succeeded += 1
                bucket.ok += 1
                s.successIDs.insert(patientID)
            }
            s.seconds[second] = bucket
        }
    }
}

/// One run's shared pieces, handed to every iteration task.
final class LoadRun: Sendable {
    let options: RegisterLoadOptions
    let http: TransportClient
    let recorder: LoadRecorder
    let measuredFrom: ContinuousClock.Instant
    private let counter = Mutex(0)

    init(options: RegisterLoadOptions, http: TransportClient, recorder: LoadRecorder, measuredFrom: ContinuousClock.Instant) {
        self.options = options
        self.http = http
        self.recorder = recorder
        self.measuredFrom = measuredFrom
    }

    /// Runs one iteration whose start was intended at `intended` and records it.
    func perform(intended: ContinuousClock.Instant) async {
        let index = counter.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        let who = options.participants[index % options.participants.count]
        let error = await RegisterLoad.iteration(options, http: http, who: who, index: index)
        let micros = UInt64(max(0, (ContinuousClock.now - intended).seconds * 1_000_000))
        recorder.end(measured: intended >= measuredFrom, second: Int((intended - measuredFrom).seconds), micros: micros,
                     patientID: who.patientID, error: error)
    }
}

/// `survey-cli load register`: virtual devices registering with a PROTOCOL.md §1 server, measured like wrk2/k6.
public enum RegisterLoad {
    static func ms(_ micros: UInt64) -> Double { LoadReport.ms(micros) }

    /// One virtual device's iteration: relay token (optional), `/register_user`, optional `/download_surveys`.
    /// Returns nil on success or an error key (`register_user:403:invalid_credentials`, `transport:connect_failed`).
    static func iteration(_ options: RegisterLoadOptions, http: TransportClient, who: AdminWire.Credentials, index: Int) async -> String? {
        await registerDevice(options, http: http, who: who, index: index, timeZone: options.timeZone)
    }

    /// What one device does to join a study, as a real app would: a relay token when `options.relay` is set,
    /// `/register_user` (new password = the temporary one, so the same credentials can register again), and
    /// `/download_surveys` when `options.download` is set. Returns nil on success, else an error key.
    public static func registerDevice(_ options: RegisterLoadOptions, http: TransportClient, who: AdminWire.Credentials, index: Int,
                                      timeZone: String) async -> String? {
        let suffix = options.ios ? "/ios" : ""
        do {
            if options.healthOnly {
                let response = try await http.send(TransportRequest(url: options.server + "/__admin/health"))
                return response.status == 200 ? nil : "health:\(response.status)"
            }
            var token = "load-\(who.patientID)"
            if let relay = options.relay {
                let response = try await http.send(.json(relay + "/v1/devices", body: RelayWire.DeviceRequest(platform: options.ios ? "ios" : "android", appID: "load")))
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
            let registered = try await http.send(.form(options.server + "/register_user" + suffix, form.encoded()))
            guard registered.status == 200 else {
                return "register_user:\(registered.status)" + ((try? registered.decode(ErrorBody.self)).map { ":" + $0.error.code } ?? "")
            }
            if options.download {
                var list = FormBody()
                list["patient_id"] = who.patientID
                list["password"] = BeiwePassword.deviceHash(who.password)
                list["device_id"] = "load-device-\(index)"
                let surveys = try await http.send(.form(options.server + "/download_surveys" + suffix, list.encoded()))
                guard surveys.status == 200 else { return "download_surveys:\(surveys.status)" }
            }
            return nil
        } catch let error as TransportError {
            return "transport:\(error.code)"
        } catch {
            return "tool:\(error)"
        }
    }

    /// Runs the load and returns the report (thresholds are evaluated by the caller).
    public static func run(_ options: RegisterLoadOptions, http: TransportClient, progress: @escaping @Sendable (String) -> Void) async throws -> LoadReport {
        guard !options.participants.isEmpty else { throw LoadUsageError(flag: "--participants-file", message: "no participants to register") }
        let recorder = LoadRecorder()
        let start = ContinuousClock.now
        let end = start + options.warmup + options.duration
        let measuredFrom = start + options.warmup
        let run = LoadRun(options: options, http: http, recorder: recorder, measuredFrom: measuredFrom)

        let reporter = Task {
            var last = (ok: 0, failed: 0)
            var elapsed = 0
            while !Task.isCancelled, ContinuousClock.now < end {
                try? await Task.sleep(for: .seconds(1))
                elapsed += 1
                let s = recorder.state.withLock { ($0.succeeded, $0.failed, $0.inFlight, $0.overall) }
                progress(String(format: "t=%3ds  ok %d (+%d/s)  failed %d (+%d)  in-flight %d  p50 %.2f ms  p99 %.2f ms",
                                elapsed, s.0, s.0 - last.ok, s.1, s.1 - last.failed, s.2,
                                ms(s.3.valueAtPercentile(50)), ms(s.3.valueAtPercentile(99))))
                last = (s.0, s.1)
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
                    let measured = intended >= measuredFrom
                    let rate = schedule.rate(at: t)
                    if rate <= 0 { t += 0.01; continue }
                    if recorder.inFlight() >= maxInFlight {
                        recorder.drop(measured: measured)
                    } else {
                        recorder.begin(measured: measured, late: ContinuousClock.now - intended > .milliseconds(10))
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
                        while ContinuousClock.now < end {
                            let intended = ContinuousClock.now
                            recorder.begin(measured: intended >= measuredFrom, late: false)
                            await run.perform(intended: intended)
                        }
                    }
                }
            }
        }
        reporter.cancel()
        let elapsed = max(0.001, (ContinuousClock.now - measuredFrom).seconds)
        let s = recorder.state.withLock { $0 }
        var correct: Bool?
        var correctness: String?
        if let studyID = options.studyID, !options.healthOnly {
            do {
                let stats = try await http.send(TransportRequest(url: options.server + "/__admin/studies/\(studyID)/stats")).decode(AdminWire.StudyStats.self)
                let expected = s.successIDs.count
                correct = stats.registered >= expected && (options.warmup > .zero || stats.registered == expected)
                correctness = "server reports \(stats.registered) registered participants; the tool saw \(expected) distinct successes"
                    + (options.warmup > .zero ? " after warm-up (warm-up registrations also count on the server)" : "")
            } catch {
                correct = false
                correctness = "could not read the study's stats: \(error)"
            }
        }
        let h = s.overall
        let measuredTotal = s.succeeded + s.failed
        return LoadReport(
            scenario: options.healthOnly ? "health"
                : "register" + (options.relay == nil ? "" : "+relay_token") + (options.download ? "+download_surveys" : ""),
            model: modelName, target: options.server,
            totals: .init(started: s.started, succeeded: s.succeeded, failed: s.failed, dropped: s.dropped, late: s.late, seconds: elapsed,
                          throughput: Double(s.succeeded) / elapsed, errorRate: measuredTotal == 0 ? 0 : Double(s.failed) / Double(measuredTotal)),
            latencyMs: LoadReport.latency(h),
            errors: s.errors,
            perSecond: LoadReport.rows(s.seconds),
            correct: correct, correctness: correctness, thresholds: [:])
    }
}

/// `survey-cli load setup`: a study and its participants, created through the admin API.
public enum LoadSetup {
    public struct Result: Codable, Sendable {
        public var server: String
        public var studyID: String
        public var participants: [AdminWire.Credentials]
        enum CodingKeys: String, CodingKey { case server, studyID = "study_id", participants }
        public init(server: String, studyID: String, participants: [AdminWire.Credentials]) {
            self.server = server
            self.studyID = studyID
            self.participants = participants
        }
    }

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
