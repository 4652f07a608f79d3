import SurveyWire

/// The platforms the relay simulates.
enum Platform: String, Sendable, Codable {
    case ios, android
}

/// Store-and-forward state of one device token, as a value type: every operation returns what the
/// I/O layer must do (write events to the stream, trace lines).
struct DeviceState: Sendable, Codable {
    static let androidPendingLimit = 100

    let token: String
    let platform: Platform
    let appID: String
    /// Unacked messages, oldest first.
    private(set) var messages: [RelayMessage] = []
    private(set) var deliveredCount = 0
    private(set) var ackedCount = 0
    /// Streams opened for this token (optional: device states stored by older versions lack it).
    private(set) var streamsOpened: Int?
    /// Android overflow: a `deleted_messages` event is owed to the device.
    private(set) var deletedMessagesOwed = false
    var connected = false
    var reachable = true
    /// FCM topics the token is subscribed to (optional: device states stored by older versions lack it).
    var topics: Set<String>?
    /// Messages in flight (written, not acked) while a backlog drains.
    let ackBatch: Int

    init(token: String, platform: Platform, appID: String, ackBatch: Int = 10) {
        self.token = token
        self.platform = platform
        self.appID = appID
        self.ackBatch = max(1, ackBatch)
    }

    /// What the stream should carry.
    enum Outgoing: Sendable, Equatable {
        case push(RelayWire.Message)
        case deletedMessages
    }

    /// Accepts a message. Connected with no backlog: deliver it now. Otherwise store it by the platform's rules
    /// (behind a backlog that is still draining, it waits its turn).
    /// The most unacked messages a device holds: a connected device that never acks gets its live pushes at once, and
    /// they would pile up without bound. Past it the oldest delivered-unacked ones are dropped (traced).
    static let unackedLimit = 1_000

    mutating func accept(_ message: RelayMessage, now: Int64, trace: inout [TraceEntry]) -> [Outgoing] {
        var message = message
        trace.append(TraceEntry(messageID: message.id, token: token, event: "accepted", at: now, detail: nil))
        trimUnacked(now: now, trace: &trace)
        if connected {
            let backlog = messages.contains { $0.phase == .stored }
            message.phase = .stored
            messages.append(message)
            guard backlog else { return [deliver(messages.count - 1, now: now, detail: nil, trace: &trace)] }
            // Connected, but a backlog is draining: wait behind it (the offline store rules do not apply).
            trace.append(TraceEntry(messageID: message.id, token: token, event: "stored", at: now, detail: "behind the backlog"))
            return pump(now: now, trace: &trace)
        }
        if message.expiresAt == message.sentAt {
            // apns-expiration 0: now or never.
            trace.append(TraceEntry(messageID: message.id, token: token, event: "expired", at: now, detail: "device not connected and expiration is 0"))
            return []
        }
        switch platform {
        case .ios:
            // One stored notification per app: a newer one replaces an older undelivered one.
            for old in messages where old.phase == .stored {
                trace.append(TraceEntry(messageID: old.id, token: token, event: "dropped", at: now, detail: "replaced by \(message.id)"))
            }
            messages.removeAll { $0.phase == .stored }
        case .android:
            if let key = message.collapseID {
                for old in messages where old.phase == .stored && old.collapseID == key {
                    trace.append(TraceEntry(messageID: old.id, token: token, event: "dropped", at: now, detail: "collapsed into \(message.id)"))
                }
                messages.removeAll { $0.phase == .stored && $0.collapseID == key }
            }
            if messages.filter({ $0.phase == .stored }).count >= Self.androidPendingLimit {
                for old in messages where old.phase == .stored {
                    trace.append(TraceEntry(messageID: old.id, token: token, event: "dropped", at: now, detail: "overflow: more than \(Self.androidPendingLimit) pending"))
                }
                messages.removeAll { $0.phase == .stored }
                deletedMessagesOwed = true
                trace.append(TraceEntry(messageID: message.id, token: token, event: "dropped", at: now, detail: "overflow"))
                return []
            }
        }
        message.phase = .stored
        messages.append(message)
        trace.append(TraceEntry(messageID: message.id, token: token, event: "stored", at: now, detail: nil))
        return pump(now: now, trace: &trace)
    }

    /// Makes room for one more message under ``unackedLimit`` by dropping the oldest delivered-unacked ones (the device
    /// has them and did not ack them).
    private mutating func trimUnacked(now: Int64, trace: inout [TraceEntry]) {
        while messages.count >= Self.unackedLimit {
            let index = messages.firstIndex { $0.phase == .delivered } ?? 0
            trace.append(TraceEntry(messageID: messages[index].id, token: token, event: "dropped", at: now,
                                    detail: "more than \(Self.unackedLimit) unacked"))
            messages.remove(at: index)
        }
    }

    /// Writes message `index` to the stream.
    private mutating func deliver(_ index: Int, now: Int64, detail: String?, trace: inout [TraceEntry]) -> Outgoing {
        if messages[index].deliveries == 0 { deliveredCount += 1 }
        messages[index].deliveries += 1
        messages[index].phase = .delivered
        trace.append(TraceEntry(messageID: messages[index].id, token: token, event: "delivered", at: now, detail: detail))
        return .push(messages[index].wire)
    }

    /// While connected, sends stored messages oldest first until `ackBatch` are in flight.
    private mutating func pump(now: Int64, trace: inout [TraceEntry]) -> [Outgoing] {
        guard connected else { return [] }
        var inFlight = messages.filter { $0.phase == .delivered }.count
        var out: [Outgoing] = []
        for index in messages.indices where inFlight < ackBatch && messages[index].phase == .stored {
            out.append(deliver(index, now: now, detail: messages[index].deliveries == 0 ? nil : "again", trace: &trace))
            inFlight += 1
        }
        return out
    }

    /// A stream connected: everything unacked and unexpired goes out again, oldest first, in ack-gated batches of
    /// `ackBatch` — except messages up to and including `lastEventID` (the client has them and will ack them; they
    /// count as in flight).
    mutating func connect(lastEventID: String?, now: Int64, trace: inout [TraceEntry]) -> [Outgoing] {
        connected = true
        streamsOpened = (streamsOpened ?? 0) + 1
        expire(now: now, trace: &trace)
        var skipThrough = -1
        if let lastEventID, let index = messages.firstIndex(where: { $0.id == lastEventID }) { skipThrough = index }
        var out: [Outgoing] = []
        if deletedMessagesOwed {
            out.append(.deletedMessages)
            deletedMessagesOwed = false
        }
        for index in messages.indices {
            messages[index].phase = index <= skipThrough ? .delivered : .stored
        }
        return out + pump(now: now, trace: &trace)
    }

    mutating func disconnect() { connected = false }

    /// Acks messages; they are never sent again. Returns how many were pending, and what the freed slots send next.
    mutating func ack(_ ids: [String], now: Int64, trace: inout [TraceEntry]) -> (count: Int, next: [Outgoing]) {
        let set = Set(ids)
        var count = 0
        messages.removeAll { message in
            guard set.contains(message.id) else { return false }
            count += 1
            trace.append(TraceEntry(messageID: message.id, token: token, event: "acked", at: now, detail: nil))
            return true
        }
        ackedCount += count
        return (count, pump(now: now, trace: &trace))
    }

    /// Drops expired messages.
    mutating func expire(now: Int64, trace: inout [TraceEntry]) {
        messages.removeAll { message in
            guard message.isExpired(at: now) else { return false }
            trace.append(TraceEntry(messageID: message.id, token: token, event: "expired", at: now, detail: nil))
            return true
        }
    }

    func view(now: Int64) -> RelayWire.DeviceView {
        RelayWire.DeviceView(token: token, platform: platform.rawValue, appID: appID, connected: connected, reachable: reachable,
                             pending: messages.filter { !$0.isExpired(at: now) }.map(\.wire),
                             delivered: deliveredCount, acked: ackedCount, streamsOpened: streamsOpened ?? 0)
    }
}
