import Foundation
import SurveyWire

/// What a device stream carries: relay output, or a keepalive tick.
enum StreamItem: Sendable {
    case outgoing(DeviceState.Outgoing)
    case keepalive
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
    }

    enum ConnectError: Error, Sendable {
        case unknownToken
        case unregistered
        case unreachable
    }

    private struct Connection {
        let id: UInt64
        let continuation: AsyncStream<StreamItem>.Continuation
    }

    private var devices: [String: DeviceState] = [:]
    private var retired: [String: Int64] = [:]
    private var connections: [String: Connection] = [:]
    private var trace: [TraceEntry] = []
    private var nextConnectionID: UInt64 = 1
    private var clockOffsetMillis: Int64 = 0
    private let traceLimit: Int

    init(traceLimit: Int = 100_000) {
        self.traceLimit = traceLimit
    }

    /// Relay-clock milliseconds (real time plus the control API's advance).
    func now() -> Int64 {
        WireTime.epochMillis(Date()) + clockOffsetMillis
    }

    // MARK: Device link

    func register(platform: Platform, appID: String) -> String {
        var token: String
        repeat { token = TokenFactory.make(platform) } while devices[token] != nil || retired[token] != nil
        devices[token] = DeviceState(token: token, platform: platform, appID: appID)
        return token
    }

    func isRetired(_ token: String) -> Int64? { retired[token] }

    func connect(token: String, lastEventID: String?) throws(ConnectError) -> (UInt64, AsyncStream<StreamItem>) {
        guard var device = devices[token] else { throw retired[token] != nil ? .unregistered : .unknownToken }
        guard device.reachable else { throw .unreachable }
        if let old = connections[token] { old.continuation.finish() }
        let (stream, continuation) = AsyncStream<StreamItem>.makeStream()
        let id = nextConnectionID
        nextConnectionID += 1
        connections[token] = Connection(id: id, continuation: continuation)
        var entries: [TraceEntry] = []
        let out = device.connect(lastEventID: lastEventID, now: now(), trace: &entries)
        devices[token] = device
        record(entries)
        for item in out { continuation.yield(.outgoing(item)) }
        return (id, stream)
    }

    /// A stream ended. Only the current connection of a token marks it disconnected.
    func disconnect(token: String, connectionID: UInt64) {
        guard let current = connections[token], current.id == connectionID else { return }
        current.continuation.finish()
        connections[token] = nil
        devices[token]?.disconnect()
    }

    func keepalive(token: String, connectionID: UInt64) -> Bool {
        guard let current = connections[token], current.id == connectionID else { return false }
        current.continuation.yield(.keepalive)
        return true
    }

    /// Acks; false when the token is unknown.
    func ack(token: String, ids: [String]) -> Bool {
        guard devices[token] != nil else { return false }
        var entries: [TraceEntry] = []
        _ = devices[token]!.ack(ids, now: now(), trace: &entries)
        record(entries)
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
        retired[token] = now()
        if let connection = connections.removeValue(forKey: token) { connection.continuation.finish() }
    }

    // MARK: Provider side

    func send(token: String, platformRequired: Platform?, message: RelayMessage) -> SendOutcome {
        if let at = retired[token] { return .unregistered(at) }
        guard var device = devices[token] else { return .unknownToken }
        if let platformRequired, device.platform != platformRequired { return .wrongPlatform }
        var entries: [TraceEntry] = []
        let out = device.accept(message, now: now(), trace: &entries)
        devices[token] = device
        record(entries)
        if let connection = connections[token] {
            for item in out { connection.continuation.yield(.outgoing(item)) }
        }
        return .accepted
    }

    // MARK: Control

    func view(token: String) -> RelayWire.DeviceView? {
        devices[token]?.view(now: now())
    }

    func setReachable(token: String, reachable: Bool) -> Bool {
        guard devices[token] != nil else { return false }
        devices[token]!.reachable = reachable
        if !reachable, let connection = connections.removeValue(forKey: token) {
            connection.continuation.finish()
            devices[token]!.disconnect()
        }
        return true
    }

    func traceEntries(token: String?) -> [TraceEntry] {
        guard let token else { return trace }
        return trace.filter { $0.token == token }
    }

    func advanceClock(seconds: Int64) -> Int64 {
        clockOffsetMillis += seconds * 1000
        let t = now()
        var entries: [TraceEntry] = []
        for token in devices.keys { devices[token]!.expire(now: t, trace: &entries) }
        record(entries)
        return t
    }

    func reset() {
        for connection in connections.values { connection.continuation.finish() }
        connections = [:]
        devices = [:]
        retired = [:]
        trace = []
        clockOffsetMillis = 0
    }

    /// Ends every open stream (graceful shutdown).
    func closeAllStreams() {
        for (token, connection) in connections {
            connection.continuation.finish()
            devices[token]?.disconnect()
        }
        connections = [:]
    }

    private func record(_ entries: [TraceEntry]) {
        trace.append(contentsOf: entries)
        if trace.count > traceLimit { trace.removeFirst(trace.count - traceLimit) }
    }
}

/// Device tokens in each platform's shape.
enum TokenFactory {
    static func make(_ platform: Platform) -> String {
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
