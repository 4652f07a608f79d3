import Foundation
import Histogram
import Synchronization
import SurveyWire
import Transport

/// How a push load run is driven.
public struct PushLoadOptions: Sendable {
    /// The relays' base URLs: devices are created on them in turn, and each push goes to the relay that issued its
    /// token (`RelayNode`).
    public var relays: [String]
    /// The first relay.
    public var relay: String { relays[0] }
    /// Node id → relay URL, learnt from the tokens each relay issued.
    var nodes: [Int: String] = [:]

    /// The relay that issued `token` (the first relay when the token names no known node).
    func relay(for token: String) -> String {
        guard relays.count > 1, let node = RelayNode.node(of: token), let url = nodes[node] else { return relays[0] }
        return url
    }
    /// Every option as given, for the report.
    public var recordedOptions: [String: String] = [:]
    /// Simulated devices, each with its own token and event stream.
    public var devices: Int
    /// `android` (FCM-style `messages:send`) or `ios` (APNs-style `/3/device/{token}`).
    public var platform: String
    /// Pushes per second over time (open model: sends happen on schedule whatever the relay does).
    public var rate: RateSchedule
    /// The measured window.
    public var duration: Duration
    /// Time run before the window opens, not counted.
    public var warmup: Duration
    /// How long to wait for deliveries still in flight after the last send before counting them lost.
    public var grace: Duration
    /// Sends in flight at most; further sends are dropped and counted.
    public var maxInFlight: Int
    /// FCM project id in the send path.
    public var fcmProject: String
    /// Devices connecting at once while the run sets up.
    public var connectConcurrency: Int
    /// Local addresses the device streams connect from, round robin (empty = the system's choice).
    public var sourceAddresses: [String] = []
    /// After a stream ends, a device waits a random time up to this before reconnecting (a storm spreads out).
    public var reconnectJitter: Duration = .seconds(1)

    /// Options for a run against `relay` (and `moreRelays`, devices spread over them), with defaults for the rest.
    public init(relay: String, devices: Int, platform: String = "android", rate: RateSchedule, duration: Duration,
                warmup: Duration = .zero, grace: Duration = .seconds(5), maxInFlight: Int = 1000, fcmProject: String = "survey-trio",
                connectConcurrency: Int = 64, moreRelays: [String] = []) {
        relays = [relay] + moreRelays
        self.devices = devices
        self.platform = platform
        self.rate = rate
        self.duration = duration
        self.warmup = warmup
        self.grace = grace
        self.maxInFlight = maxInFlight
        self.fcmProject = fcmProject
        self.connectConcurrency = connectConcurrency
    }
}

/// What the push run has sent and received, keyed by the load id each push carries in its payload.
final class PushLedger: Sendable {
    struct Outstanding {
        var intended: ContinuousClock.Instant
        var measured: Bool
    }

    struct State {
        var outstanding: [String: Outstanding] = [:]
        var received: Set<String> = []
        var overall = HistogramCodec.make()
        var seconds: [Int: LoadReport.SecondBucket] = [:]
        var errors: [String: Int] = [:]
        var startedPerSecond: [Int: Int] = [:]
        /// Deliveries that arrived before the sending window closed (what throughput counts).
        var deliveredInWindow = 0
        var started = 0, delivered = 0, failed = 0, dropped = 0, late = 0, duplicates = 0, inFlight = 0, foreign = 0
    }

    let state = Mutex(State())
    let measuredFrom: ContinuousClock.Instant
    let windowEnd: ContinuousClock.Instant

    init(measuredFrom: ContinuousClock.Instant, windowEnd: ContinuousClock.Instant? = nil) {
        self.measuredFrom = measuredFrom
        self.windowEnd = windowEnd ?? measuredFrom + .seconds(365 * 86400)
    }

    func second(_ instant: ContinuousClock.Instant) -> Int { Int((instant - measuredFrom).seconds) }

    /// A send is about to go out; it counts as outstanding until received.
    func sending(_ id: String, intended: ContinuousClock.Instant, late: Bool) {
        let measured = intended >= measuredFrom
        state.withLock { s in
            s.outstanding[id] = Outstanding(intended: intended, measured: measured)
            s.inFlight += 1
            if measured {
                s.started += 1
                s.startedPerSecond[second(intended), default: 0] += 1
                if late { s.late += 1 }
            }
        }
    }

    /// The provider refused the send: it will never arrive, so it is a failure, not a loss.
    func refused(_ id: String, error: String) {
        state.withLock { s in
            s.inFlight -= 1
            guard let entry = s.outstanding.removeValue(forKey: id) else { return }
            guard entry.measured else { return }
            s.failed += 1
            s.errors[error, default: 0] += 1
            // Rows are by completion time, as for registrations.
            s.seconds[max(0, second(ContinuousClock.now)), default: (HistogramCodec.make(), 0, 0)].failed += 1
        }
    }

    func accepted() { state.withLock { $0.inFlight -= 1 } }

    func drop(measured: Bool) { state.withLock { if measured { $0.dropped += 1 } } }

    func inFlight() -> Int { state.withLock { $0.inFlight } }

    /// A device received the push with this load id.
    func received(_ id: String, at now: ContinuousClock.Instant) {
        state.withLock { s in
            guard let entry = s.outstanding.removeValue(forKey: id) else {
                if s.received.contains(id) { s.duplicates += 1 } else { s.foreign += 1 }
                return
            }
            s.received.insert(id)
            guard entry.measured else { return }
            let micros = UInt64(max(1, (now - entry.intended).seconds * 1_000_000))
            s.delivered += 1
            if now <= windowEnd { s.deliveredInWindow += 1 }
            _ = s.overall.record(micros)
            let key = max(0, second(now))
            // In place: copying the bucket out and back would copy its histogram's counts on every delivery.
            _ = s.seconds[key, default: (HistogramCodec.make(), 0, 0)].histogram.record(micros)
            s.seconds[key]!.ok += 1
        }
    }
}

/// `survey-cli load push`: simulated devices hold event streams to the relay (one process, one libcurl multi handle)
/// while pushes go to the provider API on a schedule; reports delivery latency from each push's intended send time
/// to its receipt on the device, provider errors, duplicates, and losses (sent, accepted, never received).
public enum PushLoad {
    static func ms(_ micros: UInt64) -> Double { LoadReport.ms(micros) }

    /// One connected simulated device.
    struct Device: Sendable {
        var token: String
    }

    /// Connects the devices, sends pushes on the rate schedule, waits for deliveries, and reports; `progress` gets a line a second.
    public static func run(_ given: PushLoadOptions, http streams: TransportClient, progress: @escaping @Sendable (String) -> Void) async throws -> LoadReport {
        var setup = given
        guard setup.platform == "android" || setup.platform == "ios" else {
            throw LoadUsageError(flag: "--platform", message: "must be android or ios")
        }
        let cpuBefore = ProcessCPU.seconds()
        let wallStart = Date()
        // Sends and acks on their own client with a bounded connection pool (extra requests queue in libcurl), so a
        // slow relay cannot make the tool open a connection per request in flight and run either side out of files.
        // `streams` carries only the long-lived device streams.
        let http = TransportClient(configuration: .init(defaultTimeout: .seconds(30), connectTimeout: .seconds(5), maxConnectionsPerHost: 256))
        defer { http.shutdown() }
        // Tokens.
        progress("creating \(setup.devices) \(setup.platform) devices on \(setup.relays.joined(separator: ", "))")
        let created = try await createDevices(setup, http: http)
        let tokens = created.map(\.token)
        for (token, relay) in created {
            if let node = RelayNode.node(of: token) { setup.nodes[node] = relay }
        }
        if setup.relays.count > 1, Set(setup.nodes.values).count < setup.relays.count {
            progress("warning: the relays do not all have different node ids (push-relay --node-id); pushes go to the first relay")
        }
        let options = setup
        // Streams: every device listens until the run ends.
        let links = PushLinks()
        let listeners = Task { () -> Void in
            await withDiscardingTaskGroup { group in
                for (index, token) in tokens.enumerated() {
                    let local = options.sourceAddresses.isEmpty ? nil : options.sourceAddresses[index % options.sourceAddresses.count]
                    group.addTask { await listen(token: token, localAddress: local, options: options, streams: streams, http: http, links: links) }
                }
            }
        }
        defer { listeners.cancel() }
        let connected = try await waitForConnections(tokens.count, links: links, progress: progress)
        progress("\(connected) of \(tokens.count) devices connected")

        let start = ContinuousClock.now
        let measuredFrom = start + options.warmup
        let ledger = PushLedger(measuredFrom: measuredFrom, windowEnd: measuredFrom + options.duration)
        links.ledger.withLock { $0 = ledger }
        let sendEnd = start + options.warmup + options.duration

        let reporter = Task {
            var last = (ok: 0, failed: 0)
            var elapsed = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if Task.isCancelled { break }
                elapsed += 1
                let s = ledger.state.withLock { ($0.delivered, $0.failed, $0.outstanding.count, $0.overall) }
                progress(String(format: "t=%3ds  delivered %d (+%d/s)  failed %d (+%d)  outstanding %d  p50 %.2f ms  p99 %.2f ms",
                                elapsed, s.0, s.0 - last.ok, s.1, s.1 - last.failed, s.2,
                                ms(s.3.valueAtPercentile(50)), ms(s.3.valueAtPercentile(99))))
                last = (s.0, s.1)
            }
        }
        defer { reporter.cancel() }

        await withDiscardingTaskGroup { group in
            var t = 0.0
            var index = 0
            let total = (options.warmup + options.duration).seconds
            while t < total {
                let intended = start + .microseconds(Int64(t * 1_000_000))
                try? await Task.sleep(until: intended, clock: .continuous)
                // Cancelled: the run ends here with what it has, rather than firing the rest of the schedule at once.
                if Task.isCancelled { break }
                let rate = options.rate.rate(at: t)
                if rate <= 0 { t += 0.01; continue }
                if ledger.inFlight() >= options.maxInFlight {
                    ledger.drop(measured: intended >= measuredFrom)
                } else {
                    let token = tokens[index % tokens.count]
                    let id = "load-\(index)"
                    ledger.sending(id, intended: intended, late: ContinuousClock.now - intended > .milliseconds(10))
                    group.addTask { await send(id: id, token: token, options: options, http: http, ledger: ledger) }
                }
                index += 1
                t += 1 / rate
            }
        }
        // Let the last deliveries land.
        let graceEnd = ContinuousClock.now + options.grace
        while ContinuousClock.now < graceEnd, !Task.isCancelled, ledger.state.withLock({ !$0.outstanding.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(50))
        }
        let elapsed = max(0.001, (sendEnd - measuredFrom).seconds)
        var s = ledger.state.withLock { $0 }
        let lost = s.outstanding.values.filter(\.measured).count
        if lost > 0 { s.errors["lost", default: 0] += lost }
        if s.duplicates > 0 { s.errors["duplicate", default: 0] += s.duplicates }
        let h = s.overall
        let finished = s.delivered + s.failed + lost
        var report = LoadReport(
            scenario: "push(\(options.platform), \(tokens.count) devices)", model: "open", target: options.relays.joined(separator: ","),
            totals: .init(started: s.started, succeeded: s.delivered, failed: s.failed + lost, dropped: s.dropped, late: s.late,
                          seconds: elapsed, throughput: Double(s.deliveredInWindow) / elapsed,
                          errorRate: finished == 0 ? 0 : Double(s.failed + lost) / Double(finished),
                          offeredRate: Double(s.started) / elapsed, completedInWindow: s.deliveredInWindow,
                          drainSeconds: max(0, (ContinuousClock.now - sendEnd).seconds)),
            latencyMs: LoadReport.latency(h),
            errors: s.errors,
            perSecond: LoadReport.rows(s.seconds, started: s.startedPerSecond),
            correct: lost == 0 && s.duplicates == 0,
            correctness: "\(s.delivered) delivered, \(lost) lost (accepted by the relay, not received within \(options.grace) after the last send), "
                + "\(s.duplicates) duplicates, \(connected) of \(tokens.count) devices connected",
            thresholds: [:])
        report.histogram = HistogramCodec.encode(h)
        report.run = .here(measuredFrom: wallStart.addingTimeInterval(options.warmup.seconds), options: options.recordedOptions,
                           participants: nil, timeout: nil, cpuSeconds: ProcessCPU.seconds() - cpuBefore, iterations: s.started)
        return report
    }

    /// `POST /v1/devices` for every device, a bounded number at a time, spread over the relays in turn; each token
    /// with the relay that issued it.
    static func createDevices(_ options: PushLoadOptions, http: TransportClient) async throws -> [(token: String, relay: String)] {
        let body = RelayWire.DeviceRequest(platform: options.platform, appID: "org.beiwe.load")
        return try await withThrowingTaskGroup(of: [(token: String, relay: String)].self) { group in
            let workers = max(1, min(options.connectConcurrency, options.devices))
            for worker in 0..<workers {
                let count = options.devices / workers + (worker < options.devices % workers ? 1 : 0)
                group.addTask {
                    var tokens: [(token: String, relay: String)] = []
                    for i in 0..<count {
                        let relay = options.relays[(worker + i * workers) % options.relays.count]
                        let response = try await http.send(.json(relay + "/v1/devices", body: body))
                        guard response.status == 200 || response.status == 201 else {
                            throw LoadSetupError("the relay answered \(response.status) to POST /v1/devices: \(response.text.prefix(200))")
                        }
                        tokens.append((try response.decode(RelayWire.TokenResponse.self).token, relay))
                    }
                    return tokens
                }
            }
            var all: [(token: String, relay: String)] = []
            for try await part in group { all += part }
            return all
        }
    }

    /// Waits until the relay reports every device connected (or 30 s pass); returns how many are.
    static func waitForConnections(_ count: Int, links: PushLinks, progress: @Sendable (String) -> Void) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        var connected = 0
        while ContinuousClock.now < deadline {
            connected = links.connected.withLock { $0 }
            if connected >= count { return connected }
            try await Task.sleep(for: .milliseconds(200))
        }
        progress("only \(connected) of \(count) streams opened within 30 s")
        return connected
    }

    /// One device's stream: records each push's load id, acks it, and reconnects if the stream ends.
    static func listen(token: String, localAddress: String?, options: PushLoadOptions, streams: TransportClient, http: TransportClient,
                       links: PushLinks) async {
        var counted = false
        defer { if counted { links.connected.withLock { $0 -= 1 } } }
        var first = true
        while !Task.isCancelled {
            if !first, options.reconnectJitter > .zero {
                try? await Task.sleep(for: .milliseconds(Int.random(in: 0...Int(options.reconnectJitter.seconds * 1000))))
            }
            first = false
            do {
                var request = TransportRequest(url: options.relay(for: token) + "/v1/devices/\(token)/stream")
                request.localAddress = localAddress
                let stream = try await streams.eventStream(request)
                guard stream.status == 200 else {
                    try await Task.sleep(for: .milliseconds(500))
                    continue
                }
                if !counted {
                    counted = true
                    links.connected.withLock { $0 += 1 }
                }
                for try await item in stream.items {
                    guard case .event(let event) = item, event.event == "push", let (messageID, loadID) = pushIDs(event) else { continue }
                    let now = ContinuousClock.now
                    if let loadID {
                        links.ledger.withLock { $0 }?.received(loadID, at: now)
                    }
                    _ = try? await http.send(ackRequest(options.relay(for: token) + "/v1/devices/\(token)/ack", id: messageID))
                }
            } catch {
                if Task.isCancelled { return }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The `load_id` a push carries: in FCM `data`, or at the top of an APNs payload.
    static func loadID(_ payload: JSONValue) -> String? {
        payload["load_id"]?.stringValue ?? payload["data"]?["load_id"]?.stringValue
    }

    // The tool's own hot path: at a few thousand deliveries a second, Foundation's JSON coders were a fifth of each
    // driver's CPU (perf). Bodies are written with `JSONValue.compactText` (the relay's own writer, byte-identical to
    // WireJSON's encoder), and push events are read for the two fields the tool needs, with a full decode as fallback.

    /// The message id (the event's `id:` line, else its data's `id`) and load id of a push event; nil if neither reads.
    static func pushIDs(_ event: ServerSentEvent) -> (String, String?)? {
        let data = event.data.utf8
        if let id = event.id, let start = data.firstRange(of: #""load_id":""#.utf8)?.upperBound,
           let end = data[start...].firstIndex(of: UInt8(ascii: "\"")), !data[start..<end].contains(UInt8(ascii: "\\")) {
            return (id, String(decoding: data[start..<end], as: UTF8.self))
        }
        guard let message = try? WireJSON.decode(RelayWire.Message.self, from: event.data) else { return nil }
        return (message.id, loadID(message.payload))
    }

    static func ackRequest(_ url: String, id: String) -> TransportRequest {
        jsonRequest(url, ["ids": [.string(id)]])
    }

    static func jsonRequest(_ url: String, _ body: JSONValue) -> TransportRequest { jsonRequest(url, bytes: body.compactBytes) }

    static func jsonRequest(_ url: String, bytes: [UInt8]) -> TransportRequest {
        TransportRequest(method: "POST", url: url, headers: [(name: "Content-Type", value: "application/json")], body: bytes)
    }

    /// The provider request for one push: FCM `messages:send` with the load id in `data`, or an APNs background push.
    static func sendRequest(id: String, token: String, options: PushLoadOptions) -> TransportRequest {
        if options.platform == "android" {
            // `{"message":{"data":{"load_id":…},"token":…}}`, the compact sorted text, without building a JSONValue tree.
            var body = Array(#"{"message":{"data":{"load_id":"#.utf8)
            JSONValue.appendString(id, to: &body)
            body += #"},"token":"#.utf8
            JSONValue.appendString(token, to: &body)
            body += "}}".utf8
            return jsonRequest(options.relay(for: token) + "/v1/projects/\(options.fcmProject)/messages:send", bytes: body)
        }
        var request = jsonRequest(options.relay(for: token) + "/3/device/\(token)", ["aps": ["content-available": 1], "load_id": .string(id)])
        request.headers.append(("apns-push-type", "background"))
        request.headers.append(("apns-priority", "5"))
        return request
    }

    /// Sends one push through the provider API and records the outcome.
    static func send(id: String, token: String, options: PushLoadOptions, http: TransportClient, ledger: PushLedger) async {
        do {
            let request = sendRequest(id: id, token: token, options: options)
            let response = try await http.send(request)
            if response.status == 200 {
                ledger.accepted()
            } else {
                let reason = (try? response.decode(RelayWire.APNsError.self))?.reason
                    ?? (try? response.decode(RelayWire.FCMError.self))?.error.status ?? "unknown"
                ledger.refused(id, error: "send:\(response.status):\(reason)")
            }
        } catch {
            ledger.refused(id, error: "transport:\(error.code)")
        }
    }
}

/// What the stream listeners of one run share: how many streams are open, and the ledger once sending starts.
final class PushLinks: Sendable {
    let connected = Mutex(0)
    let ledger = Mutex<PushLedger?>(nil)
}

/// Setting up a run failed (the target refused a setup request).
public struct LoadSetupError: Error, CustomStringConvertible {
    /// What failed.
    public var description: String
    /// An error with its description.
    public init(_ description: String) { self.description = description }
}
