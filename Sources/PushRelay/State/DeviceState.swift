import SurveyWire

/// The platforms the relay simulates.
enum Platform: String, Sendable, Codable {
    case ios, android
}

/// Store-and-forward state of one device token, as a value type: every operation returns what the
/// I/O layer must do (write events to the stream, trace lines).
struct DeviceState: Sendable {
    static let androidPendingLimit = 100

    let token: String
    let platform: Platform
    let appID: String
    /// Unacked messages, oldest first.
    private(set) var messages: [RelayMessage] = []
    private(set) var deliveredCount = 0
    private(set) var ackedCount = 0
    /// Android overflow: a `deleted_messages` event is owed to the device.
    private(set) var deletedMessagesOwed = false
    var connected = false
    var reachable = true

    init(token: String, platform: Platform, appID: String) {
        self.token = token
        self.platform = platform
        self.appID = appID
    }

    /// What the stream should carry.
    enum Outgoing: Sendable, Equatable {
        case push(RelayWire.Message)
        case deletedMessages
    }

    /// Accepts a message. Connected: deliver it now. Otherwise store it by the platform's rules.
    mutating func accept(_ message: RelayMessage, now: Int64, trace: inout [TraceEntry]) -> [Outgoing] {
        var message = message
        trace.append(TraceEntry(messageID: message.id, token: token, event: "accepted", at: now, detail: nil))
        if connected {
            message.phase = .delivered
            messages.append(message)
            deliveredCount += 1
            trace.append(TraceEntry(messageID: message.id, token: token, event: "delivered", at: now, detail: nil))
            return [.push(message.wire)]
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
        return []
    }

    /// A stream connected: everything unacked and unexpired goes out again, oldest first, except messages
    /// up to and including `lastEventID` (the client already has them and will ack them).
    mutating func connect(lastEventID: String?, now: Int64, trace: inout [TraceEntry]) -> [Outgoing] {
        connected = true
        expire(now: now, trace: &trace)
        var skipThrough = -1
        if let lastEventID, let index = messages.firstIndex(where: { $0.id == lastEventID }) { skipThrough = index }
        var out: [Outgoing] = []
        if deletedMessagesOwed {
            out.append(.deletedMessages)
            deletedMessagesOwed = false
        }
        for index in messages.indices where index > skipThrough {
            if messages[index].phase == .stored { deliveredCount += 1 }
            messages[index].phase = .delivered
            trace.append(TraceEntry(messageID: messages[index].id, token: token, event: "delivered", at: now,
                                    detail: "on connect"))
            out.append(.push(messages[index].wire))
        }
        return out
    }

    mutating func disconnect() { connected = false }

    /// Acks messages; they are never sent again. Returns how many were pending.
    mutating func ack(_ ids: [String], now: Int64, trace: inout [TraceEntry]) -> Int {
        let set = Set(ids)
        var count = 0
        messages.removeAll { message in
            guard set.contains(message.id) else { return false }
            count += 1
            trace.append(TraceEntry(messageID: message.id, token: token, event: "acked", at: now, detail: nil))
            return true
        }
        ackedCount += count
        return count
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
                             delivered: deliveredCount, acked: ackedCount)
    }
}
