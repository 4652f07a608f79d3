import Foundation
import Prometheus
import ServerSupport
import SurveyWire
import Synchronization

/// What a device stream carries: relay output, or a keepalive tick.
enum StreamItem: Sendable {
    case outgoing(DeviceState.Outgoing)
    case keepalive
}

/// Where the hub writes one device's stream. Calls come from the hub in order and must not block: an implementation
/// queues the bytes for its connection (`ChannelStreamSink` hands them to the connection's event loop).
protocol StreamSink: Sendable {
    /// The connect was accepted: start the response. Called once, before any `send`.
    func open()
    func send(_ item: StreamItem)
    /// End the stream (replaced, uninstalled, made unreachable, closed by a fault, or shutdown). Nothing is sent after it.
    func finish()
}

/// The relay's whole state: devices, retired tokens, open streams, the trace and the relay clock.
/// Every mutation goes through this actor, so the store-and-forward rules see one order of events.
actor RelayHub {
    /// Result of a provider send.
    enum SendOutcome: Sendable, Equatable {
        case accepted
        case unknownToken
        case wrongPlatform
        /// Rotated or uninstalled, with the relay-clock ms it happened.
        case unregistered(Int64)
        /// A fault outage: the provider API answers this status.
        case outage(Int)
        /// Over `--device-rate`.
        case rateLimited
        /// APNs: `apns-topic` is not the app the token was issued for.
        case topicMismatch
    }

    enum ConnectError: Error, Sendable {
        case unknownToken
        case unregistered
        case unreachable
    }

    private struct Connection {
        let id: UInt64
        let sink: any StreamSink
    }

    private var devices: [String: DeviceState] = [:]
    private var retired: [String: Int64] = [:]
    /// Retired tokens in the order they were retired; at most ``retiredLimit`` are remembered.
    private var retiredOrder: [String] = []
    /// How many retired tokens are remembered (a send to one answers 410; to one forgotten, as to an unknown token).
    let retiredLimit: Int
    private var connections: [String: Connection] = [:]
    private var trace: [TraceEntry] = []
    private var nextConnectionID: UInt64 = 1
    /// How far the relay clock is ahead of real time (ms). Changed only on the actor (a clock move, a reset), read from
    /// anywhere without a hop: every provider request reads the relay clock, to age credentials and stamp messages.
    private let clockOffsetMillis = Atomic<Int64>(0)
    private let traceLimit: Int
    private let metrics: ServerMetrics?

    // Faults (PUT /__control/faults).
    private var globalFaults: FaultState?
    private var deviceFaults: [String: FaultState] = [:]
    /// Connections that get nothing written any more, keepalives included (the blackhole fault).
    private var blackholed: Set<UInt64> = []
    /// Deliveries held for the reorder fault, per token.
    private var reorderBuffers: [String: [DeviceState.Outgoing]] = [:]

    private let configuration: RelayConfiguration
    /// `--node-id`: carried by every token this relay issues.
    nonisolated var nodeID: Int { configuration.nodeID }
    /// `--device-rate` token buckets: tokens left and when they were counted.
    private var buckets: [String: (tokens: Double, at: ContinuousClock.Instant)] = [:]

    /// `--store`: every change is queued to it; nil keeps everything in memory.
    private let store: RelayStore?

    init(traceLimit: Int = 100_000, metrics: ServerMetrics? = nil, configuration: RelayConfiguration = RelayConfiguration(),
         store: RelayStore? = nil, retiredLimit: Int = 100_000) throws {
        self.retiredLimit = max(1, retiredLimit)
        self.traceLimit = traceLimit
        self.metrics = metrics
        self.configuration = configuration
        self.store = store
        if let store {
            let loaded = try store.load()
            devices = loaded.devices
            retired = loaded.retired
            retiredOrder = loaded.retired.sorted { $0.value < $1.value }.map(\.key)
            if !loaded.unreadable.isEmpty {
                FileHandle.standardError.write(Data("push-relay: skipped unreadable stored devices: \(loaded.unreadable.joined(separator: ", "))\n".utf8))
            }
        }
    }

    /// Queues the devices' state to the store (when there is one); ``committed()`` waits for it.
    private func persist(_ tokens: [String]) {
        guard let store else { return }
        store.save(tokens.compactMap { devices[$0] })
    }

    /// Takes one token from the device's bucket; false when it is empty.
    private func takeToken(_ token: String) -> Bool {
        guard let rate = configuration.deviceRate else { return true }
        let capacity = max(1, rate)
        let clock = ContinuousClock.now
        var bucket = buckets[token] ?? (capacity, clock)
        bucket.tokens = min(capacity, bucket.tokens + (clock - bucket.at).seconds * rate)
        bucket.at = clock
        guard bucket.tokens >= 1 else {
            buckets[token] = bucket
            return false
        }
        bucket.tokens -= 1
        buckets[token] = bucket
        return true
    }

    /// Relay-clock milliseconds (real time plus the control API's advance).
    nonisolated func now() -> Int64 {
        WireTime.epochMillis(Date()) + clockOffsetMillis.load(ordering: .relaxed)
    }

    /// How far the relay clock is ahead of real time, in whole seconds (what ages provider credentials).
    nonisolated func clockOffsetSeconds() -> Int64 {
        clockOffsetMillis.load(ordering: .relaxed) / 1000
    }

    // MARK: Device link

    func register(platform: Platform, appID: String) -> String {
        var token: String
        repeat { token = TokenFactory.make(platform, node: configuration.nodeID) } while devices[token] != nil || retired[token] != nil
        devices[token] = DeviceState(token: token, platform: platform, appID: appID, ackBatch: configuration.ackBatch)
        persist([token])
        return token
    }

    func isRetired(_ token: String) -> Int64? { retired[token] }

    /// Opens `sink` as the token's stream (ending the one it had), then sends it the backlog. Returns the connection id
    /// that `disconnect` takes.
    func connect(token: String, lastEventID: String?, sink: any StreamSink) throws(ConnectError) -> UInt64 {
        guard var device = devices[token] else { throw retired[token] != nil ? .unregistered : .unknownToken }
        guard device.reachable else { throw .unreachable }
        if let old = connections[token] { old.sink.finish() }
        let id = nextConnectionID
        nextConnectionID += 1
        connections[token] = Connection(id: id, sink: sink)
        sink.open()
        var entries: [TraceEntry] = []
        let out = device.connect(lastEventID: lastEventID, now: now(), trace: &entries)
        devices[token] = device
        persist([token])
        record(entries)
        deliver(out, token: token)
        return id
    }

    /// A stream ended. Only the current connection of a token marks it disconnected.
    func disconnect(token: String, connectionID: UInt64) {
        blackholed.remove(connectionID)
        guard let current = connections[token], current.id == connectionID else { return }
        current.sink.finish()
        connections[token] = nil
        devices[token]?.disconnect()
    }

    /// A `: keepalive` comment on the open streams of one slice (connection id modulo `slices`), blackholed ones excepted.
    func keepalive(slice: Int, of slices: Int) {
        for connection in connections.values where Int(connection.id % UInt64(slices)) == slice && !blackholed.contains(connection.id) {
            connection.sink.send(.keepalive)
        }
    }

    /// Acks; false when the token is unknown.
    func ack(token: String, ids: [String]) -> Bool {
        guard devices[token] != nil else { return false }
        var entries: [TraceEntry] = []
        let next = devices[token]!.ack(ids, now: now(), trace: &entries).next
        persist([token])
        record(entries)
        deliver(next, token: token)
        return true
    }

    func rotate(token: String) -> String? {
        guard let device = devices[token] else { return nil }
        let fresh = register(platform: device.platform, appID: device.appID)
        retire(token)
        return fresh
    }

    func delete(token: String) -> Bool {
        guard devices[token] != nil else { return false }
        retire(token)
        return true
    }

    private func retire(_ token: String) {
        devices[token] = nil
        // What belonged to the device goes with it (they grew with every token ever retired).
        buckets[token] = nil
        deviceFaults[token] = nil
        retired[token] = now()
        retiredOrder.append(token)
        if retiredOrder.count > retiredLimit + retiredLimit / 4 {
            // Forget the oldest quarter at once (one pass, not a shift per retire): a send to a token retired that long
            // ago answers as for an unknown token (400) instead of 410.
            for old in retiredOrder.prefix(retiredOrder.count - retiredLimit) where devices[old] == nil { retired[old] = nil }
            retiredOrder.removeFirst(retiredOrder.count - retiredLimit)
        }
        store?.retire(token, at: retired[token]!)
        if let connection = connections.removeValue(forKey: token) { connection.sink.finish() }
    }

    /// Returns once every change made so far is committed to the store (at once without one); throws the store's error
    /// as 503 `store_unavailable`. Waits off the actor and off the calling thread: the store's writer commits on its own
    /// queue. A route that answers "kept" calls it after its change.
    nonisolated func committed() async throws {
        guard let store else { return }
        do {
            try await store.committed()
        } catch {
            throw APIError(.serviceUnavailable, code: "store_unavailable", "the relay's store could not commit the change: \(error)")
        }
    }

    // MARK: Provider side

    /// A provider send: ``accept(token:platformRequired:message:)``, then, when accepted, the commit that keeps it.
    /// "200 means kept": a push the store could not commit is answered 503 (the relay may still deliver it: it was in
    /// memory and on the stream before the commit failed, and a provider's retry is de-duplicated by the device).
    /// - Parameter topic: APNs' `apns-topic`, checked against the app the token was issued for.
    nonisolated func send(token: String, platformRequired: Platform?, message: RelayMessage, validateOnly: Bool = false,
                          topic: String? = nil) async -> SendOutcome {
        let outcome = await accept(token: token, platformRequired: platformRequired, message: message, validateOnly: validateOnly,
                                   topic: topic)
        guard !validateOnly else { return outcome }
        guard outcome == .accepted, store != nil else { return outcome }
        do {
            try await committed()
            return .accepted
        } catch {
            return .outage(503)
        }
    }

    /// - Parameter validateOnly: FCM's `validate_only`: every check, then nothing stored, delivered or traced.
    private func accept(token: String, platformRequired: Platform?, message: RelayMessage, validateOnly: Bool = false,
                        topic: String? = nil) -> SendOutcome {
        let t = now()
        if let status = withFaults(token, { faults -> Int? in
            guard let until = faults.outageUntil, t < until else { return nil }
            return faults.spec.outage?.status ?? 503
        }) {
            countFault("outage")
            return .outage(status)
        }
        if let status = withFaults(token, { $0.takeFailNext() }) {
            countFault("fail_next")
            return .outage(status)
        }
        if let at = retired[token] {
            if validateOnly { return .unregistered(at) }
            // APNs reports an uninstall late: within the lag the send is accepted and goes nowhere.
            if t - at < Int64(configuration.unregisteredLag.seconds * 1000) {
                record([TraceEntry(messageID: message.id, token: token, event: "accepted", at: t, detail: nil),
                        TraceEntry(messageID: message.id, token: token, event: "dropped", at: t, detail: "token unregistered (not reported yet)")])
                return .accepted
            }
            return .unregistered(at)
        }
        guard var device = devices[token] else { return .unknownToken }
        if let platformRequired, device.platform != platformRequired { return .wrongPlatform }
        if let topic, !APNsTables.topic(topic, isFor: device.appID) { return .topicMismatch }
        if validateOnly { return .accepted }
        let message = message.resolved(for: device.platform)
        guard takeToken(token) else { return .rateLimited }
        // Accepted and never delivered: a zombie token, or a dropped push.
        if let reason = withFaults(token, { faults -> String? in
            if faults.spec.zombie == true { return "zombie" }
            return faults.random.chance(faults.spec.dropRate) ? "drop" : nil
        }) {
            countFault(reason)
            record([TraceEntry(messageID: message.id, token: token, event: "accepted", at: t, detail: nil),
                    TraceEntry(messageID: message.id, token: token, event: "dropped", at: t, detail: "fault: \(reason)")])
            return .accepted
        }
        var entries: [TraceEntry] = []
        let out = device.accept(message, now: t, trace: &entries)
        devices[token] = device
        // "200 means kept": `send` answers after the commit (503 when it fails).
        persist([token])
        record(entries)
        deliver(out, token: token)
        return .accepted
    }

    // MARK: Topics

    /// Subscribes `token` to `topic`; false for a token the relay does not know.
    func subscribe(token: String, topic: String) -> Bool {
        guard devices[token] != nil else { return false }
        devices[token]!.topics = (devices[token]!.topics ?? []).union([topic])
        persist([token])
        return true
    }

    /// Unsubscribes `token` from `topic`; false for a token the relay does not know.
    func unsubscribe(token: String, topic: String) -> Bool {
        guard devices[token] != nil else { return false }
        devices[token]!.topics?.remove(topic)
        persist([token])
        return true
    }

    /// An FCM send to a topic or a condition: accepted for every subscribed device that matches (each by its own
    /// rules: rate limits, faults, store-and-forward); answered as FCM does, whoever matched. Only a global outage
    /// refuses it.
    nonisolated func send(matching condition: TopicCondition, message: RelayMessage, validateOnly: Bool) async -> SendOutcome {
        let outcome = await acceptForTopics(condition, message: message, validateOnly: validateOnly)
        guard outcome == .accepted, !validateOnly, store != nil else { return outcome }
        do {
            try await committed()
            return .accepted
        } catch {
            return .outage(503)
        }
    }

    private func acceptForTopics(_ condition: TopicCondition, message: RelayMessage, validateOnly: Bool) -> SendOutcome {
        let t = now()
        if let faults = globalFaults, let until = faults.outageUntil, t < until {
            countFault("outage")
            return .outage(faults.spec.outage?.status ?? 503)
        }
        if let status = globalFaults?.takeFailNext() {
            countFault("fail_next")
            return .outage(status)
        }
        guard !validateOnly else { return .accepted }
        let matching = devices.values.filter { device in device.topics.map { condition.matches($0) } ?? false }.map(\.token)
        for token in matching.sorted() { _ = accept(token: token, platformRequired: nil, message: message) }
        return .accepted
    }

    // MARK: Delivery and faults

    /// Runs `body` on the faults that apply to `token` (its own, else the global ones), keeping generator state.
    private func withFaults<T>(_ token: String, _ body: (inout FaultState) -> T?) -> T? {
        if deviceFaults[token] != nil { return body(&deviceFaults[token]!) }
        if globalFaults != nil { return body(&globalFaults!) }
        return nil
    }

    /// Writes relay output to the token's open stream, through the delivery faults (duplicate, delay, reorder).
    private func deliver(_ items: [DeviceState.Outgoing], token: String) {
        guard let connection = connections[token], !items.isEmpty else { return }
        let plan = withFaults(token) { faults -> (duplicate: [Bool], delays: [Int], window: Int) in
            let duplicate = items.map { _ in faults.random.chance(faults.spec.duplicateRate) }
            let delays = items.map { _ in faults.spec.delayMs.map { Int.random(in: $0.min...$0.max, using: &faults.random) } ?? 0 }
            return (duplicate, delays, faults.spec.reorderWindow ?? 0)
        }
        guard let plan else {
            for item in items where !blackholed.contains(connection.id) { connection.sink.send(.outgoing(item)) }
            return
        }
        for (index, item) in items.enumerated() {
            let copies = plan.duplicate[index] ? 2 : 1
            if copies == 2 {
                countFault("duplicate")
                // The copy is a delivery of its own in the trace (issue 50: the trace showed a duplicated message once, so
                // a test could not see from the relay that the fault fired).
                if case .push(let message) = item {
                    record([TraceEntry(messageID: message.id, token: token, event: "delivered", at: now(), detail: "a second copy (fault: duplicate)")])
                }
            }
            for _ in 0..<copies {
                if plan.delays[index] > 0 {
                    countFault("delay")
                    let delay = plan.delays[index], connectionID = connection.id
                    Task {
                        try? await Task.sleep(for: .milliseconds(delay))
                        self.deliverLater(item, token: token, connectionID: connectionID, window: plan.window)
                    }
                } else {
                    hold(item, token: token, connectionID: connection.id, window: plan.window)
                }
            }
        }
    }

    private func deliverLater(_ item: DeviceState.Outgoing, token: String, connectionID: UInt64, window: Int) {
        hold(item, token: token, connectionID: connectionID, window: window)
    }

    /// Writes now, or (reorder fault) holds until `window` items wait or 50 ms pass, then writes them shuffled.
    private func hold(_ item: DeviceState.Outgoing, token: String, connectionID: UInt64, window: Int) {
        guard let connection = connections[token], connection.id == connectionID else { return }
        guard window > 1 else {
            if !blackholed.contains(connectionID) { connection.sink.send(.outgoing(item)) }
            return
        }
        let first = reorderBuffers[token, default: []].isEmpty
        reorderBuffers[token, default: []].append(item)
        if reorderBuffers[token]!.count >= window {
            flushReorder(token)
        } else if first {
            Task {
                try? await Task.sleep(for: .milliseconds(50))
                self.flushReorder(token)
            }
        }
    }

    private func flushReorder(_ token: String) {
        guard var held = reorderBuffers.removeValue(forKey: token), !held.isEmpty else { return }
        if held.count > 1 {
            countFault("reorder")
            if deviceFaults[token] != nil { held.shuffle(using: &deviceFaults[token]!.random) }
            else if globalFaults != nil { held.shuffle(using: &globalFaults!.random) }
        }
        guard let connection = connections[token], !blackholed.contains(connection.id) else { return }
        for item in held { connection.sink.send(.outgoing(item)) }
    }

    /// Applies a `PUT /__control/faults` body: replaces the faults of its scope, and runs its one-shot actions.
    func setFaults(_ spec: RelayWire.Faults) {
        let t = now()
        var standing = spec
        standing.closeAll = nil
        standing.blackhole = nil
        let isEmpty = standing == RelayWire.Faults(token: spec.token)
        if let token = spec.token {
            deviceFaults[token] = isEmpty ? nil : FaultState(spec: standing, now: t)
        } else {
            globalFaults = isEmpty ? nil : FaultState(spec: standing, now: t)
        }
        if spec.blackhole == true {
            for (token, connection) in connections where spec.token == nil || spec.token == token {
                blackholed.insert(connection.id)
                countFault("blackhole")
            }
        }
        if spec.closeAll == true {
            for (token, connection) in connections where spec.token == nil || spec.token == token {
                connection.sink.finish()
                connections[token] = nil
                devices[token]?.disconnect()
                countFault("close")
            }
        }
    }

    private func countFault(_ kind: String) {
        counter("relay_faults_total", "kind", kind)?.increment()
    }

    /// Counters by name and label value, looked up in the registry once each (the trace records several per push).
    private var counters: [String: Counter] = [:]

    private func counter(_ name: String, _ label: String, _ value: String) -> Counter? {
        guard let metrics else { return nil }
        let key = name + "\u{0}" + value
        if let known = counters[key] { return known }
        let made = metrics.registry.makeCounter(name: name, labels: [(label, value)])
        counters[key] = made
        return made
    }

    // MARK: Control

    func view(token: String) -> RelayWire.DeviceView? {
        devices[token]?.view(now: now())
    }

    func setReachable(token: String, reachable: Bool) -> Bool {
        guard devices[token] != nil else { return false }
        devices[token]!.reachable = reachable
        if !reachable, let connection = connections.removeValue(forKey: token) {
            connection.sink.finish()
            devices[token]!.disconnect()
        }
        persist([token])
        return true
    }

    /// `GET /__control/stats`: counts of devices, open streams and retired tokens.
    func stats() -> [String: Int] {
        ["devices": devices.count, "connected": connections.count, "retired": retired.count]
    }

    func traceEntries(token: String?) -> [TraceEntry] {
        let recent = trace.suffix(traceLimit)
        guard let token else { return Array(recent) }
        return recent.filter { $0.token == token }
    }

    func advanceClock(seconds: Int64) -> Int64 {
        // The route bounds `seconds` (WireLimits.relayClockAdvanceSeconds); saturate anyway, so no caller can trap the relay.
        let (millis, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (offset, overflow2) = clockOffsetMillis.load(ordering: .relaxed).addingReportingOverflow(overflow ? .max : millis)
        clockOffsetMillis.store(overflow || overflow2 ? .max / 2 : offset, ordering: .relaxed)
        let t = now()
        var entries: [TraceEntry] = []
        for token in devices.keys { devices[token]!.expire(now: t, trace: &entries) }
        persist(Array(Set(entries.map(\.token))))
        record(entries)
        return t
    }

    func reset() {
        for connection in connections.values { connection.sink.finish() }
        connections = [:]
        globalFaults = nil
        deviceFaults = [:]
        blackholed = []
        reorderBuffers = [:]
        devices = [:]
        retired = [:]
        retiredOrder = []
        buckets = [:]
        trace = []
        store?.wipe()
        clockOffsetMillis.store(0, ordering: .relaxed)
    }

    /// Ends every open stream (graceful shutdown).
    func closeAllStreams() {
        for (token, connection) in connections {
            connection.sink.finish()
            devices[token]?.disconnect()
        }
        connections = [:]
    }

    private func record(_ entries: [TraceEntry]) {
        for entry in entries { counter("relay_messages_total", "event", entry.event)?.increment() }
        trace.append(contentsOf: entries)
        // Trimmed in steps of a quarter of the limit: dropping the oldest entry on every record moved the whole
        // 100,000-entry array each time (the relay's throughput halved once the trace was full).
        if trace.count > traceLimit + traceLimit / 4 { trace.removeFirst(trace.count - traceLimit) }
    }
}

/// Device tokens in each platform's shape.
enum TokenFactory {
    /// A new token of `platform`'s shape carrying relay node id `node` (``RelayNode``).
    static func make(_ platform: Platform, node: Int = 0) -> String {
        RelayNode.stamp(random(platform), node: node)
    }

    private static func random(_ platform: Platform) -> String {
        switch platform {
        case .ios:
            // APNs: 32 bytes as 64 lowercase hex characters.
            return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        case .android:
            // FCM registration tokens: an instance id, a colon, then a long base64url body starting "APA91b".
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let instance = String((0..<22).map { _ in alphabet.randomElement()! })
            let body = String((0..<134).map { _ in alphabet.randomElement()! })
            return "\(instance):APA91b\(body)"
        }
    }

    static func isAPNsShaped(_ token: String) -> Bool {
        token.utf8.count == 64 && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
    }
}
