import Foundation
import ServerSupport
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
    /// The HTTP client of the sends, the acks and (for an `http://` relay) the device streams.
    public var client = LoadClient.nio
    /// `--pacing-tick`: sends due within one tick go out together at its end (each at most this late, counted in its
    /// latency); zero sends each at its own time.
    public var pacingTick: Duration = .zero

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

/// `survey-cli load push`: simulated devices hold event streams to the relay (one process) while pushes go to the
/// provider API on a schedule; reports delivery latency from each push's intended send time to its receipt on the
/// device, provider errors, duplicates, and losses (sent, accepted, never received).
public enum PushLoad {
    /// Connects the devices, sends pushes on the rate schedule, waits for deliveries, and reports; `progress` gets a line a second.
    public static func run(_ options: PushLoadOptions, http given: TransportClient, progress: @escaping @Sendable (String) -> Void) async throws -> LoadReport {
        guard options.platform == "android" || options.platform == "ios" else {
            throw LoadUsageError(flag: "--platform", message: "must be android or ios")
        }
        // Sends and acks with a bounded connection pool (extra requests queue), so a slow relay cannot make the tool
        // open a connection per request in flight and run either side out of files: libcurl's, and the loops' when
        // chosen (https still goes through libcurl).
        let curl = TransportClient(configuration: .init(defaultTimeout: .seconds(30), connectTimeout: .seconds(5), maxConnectionsPerHost: 256))
        defer { curl.shutdown() }
        let loops = options.client.make(maxConnectionsPerHost: 256, timeout: .seconds(30), fallback: curl)
        // Streams hold their connections for good: on the loops (outside their limit) for a plain-HTTP relay, else on
        // the caller's client.
        let streams: any HTTPTransport = loops.flatMap { client in options.relays.allSatisfy { LoopTarget.parse($0) != nil } ? client : nil } ?? given
        do {
            let report = try await measure(options, http: loops ?? curl, streams: streams, executors: loops?.executors ?? [], progress: progress)
            await loops?.shutdown()
            return report
        } catch {
            await loops?.shutdown()
            throw error
        }
    }

    /// The run itself, on clients its caller owns: devices created and listening (on `executors`, when given, in turn),
    /// then the engine, and the listeners ended before it returns.
    static func measure(_ requested: PushLoadOptions, http: any HTTPTransport, streams: any HTTPTransport, executors: [EventLoopTaskExecutor],
                        progress: @escaping @Sendable (String) -> Void) async throws -> LoadReport {
        let cpuBefore = ProcessCPU.seconds()
        let wallStart = Date()
        var setup = requested
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
        let links = PushLinks()
        return try await withThrowingDiscardingTaskGroup { group in
            // Streams: every device listens until the run ends (the group's end cancels them and waits for them).
            for (index, token) in tokens.enumerated() {
                let local = options.sourceAddresses.isEmpty ? nil : options.sourceAddresses[index % options.sourceAddresses.count]
                group.addTask(executorPreference: executors.isEmpty ? nil : executors[index % executors.count]) {
                    await listen(token: token, localAddress: local, options: options, streams: streams, http: http, links: links)
                }
            }
            defer { group.cancelAll() }
            let connected = try await waitForConnections(tokens.count, links: links, progress: progress)
            progress("\(connected) of \(tokens.count) devices connected")
            var engine = LoadEngine(model: .open(options.rate, maxInFlight: options.maxInFlight), warmup: options.warmup,
                                    duration: options.duration, grace: options.grace)
            engine.loops = executors
            engine.pacingTick = options.pacingTick
            let outcome = await engine.run(PushPlugin(options: options, tokens: tokens, http: http, links: links), progress: progress)
            let s = outcome.state
            var report = outcome.report(
                scenario: "push(\(options.platform), \(tokens.count) devices)", target: options.relays.joined(separator: ","),
                correct: outcome.lost == 0 && s.duplicates == 0,
                correctness: "\(s.succeeded) delivered, \(outcome.lost) lost (accepted by the relay, not received within \(options.grace) after the last send), "
                    + "\(s.duplicates) duplicates, \(connected) of \(tokens.count) devices connected")
            report.run = .here(measuredFrom: wallStart.addingTimeInterval(options.warmup.seconds), options: options.recordedOptions,
                               participants: nil, timeout: nil, cpuSeconds: ProcessCPU.seconds() - cpuBefore, iterations: s.begun)
            return report
        }
    }

    /// `POST /v1/devices` for every device, a bounded number at a time, spread over the relays in turn; each token
    /// with the relay that issued it.
    static func createDevices(_ options: PushLoadOptions, http: any HTTPTransport) async throws -> [(token: String, relay: String)] {
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
    static func listen(token: String, localAddress: String?, options: PushLoadOptions, streams: any HTTPTransport, http: any HTTPTransport,
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
                        links.recorder.withLock { $0 }?.receipt(PushPlugin.index(ofLoadID: loadID), at: now)
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
        if let id = event.id, let loadID = quickLoadID(event.data) { return (id, loadID) }
        guard let message = try? WireJSON.decode(RelayWire.Message.self, from: event.data) else { return nil }
        return (message.id, loadID(message.payload))
    }

    private static let loadIDKey = Array(#""load_id":""#.utf8)

    /// The value of the first `"load_id":"…"` in `text` when it has no escape, by a byte scan (the generic
    /// `firstRange(of:)` was 6 % of the push driver's CPU).
    static func quickLoadID(_ text: String) -> String? {
        var text = text
        let key = loadIDKey
        return text.withUTF8 { bytes -> String? in
            guard bytes.count > key.count else { return nil }
            var i = 0
            while i <= bytes.count - key.count {
                if bytes[i] == key[0], bytes[i + 1] == key[1], (0..<key.count).allSatisfy({ bytes[i + $0] == key[$0] }) {
                    let start = i + key.count
                    var end = start
                    while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
                    guard end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return nil }
                    return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
                }
                i += 1
            }
            return nil
        }
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

    /// Sends one push through the provider API: awaiting its device's receipt when the provider accepted it, else failed.
    static func send(id: String, token: String, options: PushLoadOptions, http: any HTTPTransport) async -> IterationOutcome {
        do {
            let response = try await http.send(sendRequest(id: id, token: token, options: options))
            guard response.status != 200 else { return .awaitingCompletion }
            let reason = (try? response.decode(RelayWire.APNsError.self))?.reason
                ?? (try? response.decode(RelayWire.FCMError.self))?.error.status ?? "unknown"
            return .failed("send:\(response.status):\(reason)")
        } catch {
            return .failed("transport:\(error.code)")
        }
    }
}

/// The push plug-in: iteration `i` sends push `load-i` to device `i mod n` through the provider API; it completes when
/// that device's stream delivers it (the listeners report receipts to the run's recorder).
struct PushPlugin: LoadPlugin {
    let options: PushLoadOptions
    let tokens: [String]
    let http: any HTTPTransport
    let links: PushLinks

    /// The load id push `index` carries.
    static func loadID(_ index: Int) -> String { "load-\(index)" }

    /// The iteration a received load id names; nil for one this tool did not write.
    static func index(ofLoadID id: String) -> Int? {
        guard id.hasPrefix("load-") else { return nil }
        return Int(id.dropFirst(5))
    }

    func willStart(_ recorder: LoadRecorder) { links.recorder.withLock { $0 = recorder } }

    func iterate(_ index: Int, recorder: LoadRecorder) async -> IterationOutcome {
        await PushLoad.send(id: Self.loadID(index), token: tokens[index % tokens.count], options: options, http: http)
    }
}

/// What the stream listeners of one run share: how many streams are open, and the recorder once sending starts.
final class PushLinks: Sendable {
    let connected = Mutex(0)
    let recorder = Mutex<LoadRecorder?>(nil)
}

/// Setting up a run failed (the target refused a setup request).
public struct LoadSetupError: Error, CustomStringConvertible {
    /// What failed.
    public var description: String
    /// An error with its description.
    public init(_ description: String) { self.description = description }
}
