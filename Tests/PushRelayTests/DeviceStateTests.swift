import Testing
@testable import PushRelay
import SurveyWire

/// The store-and-forward state machine of one device, without sockets.
@Suite struct DeviceStateTests {
    func message(_ id: String, collapse: String? = nil, sentAt: Int64 = 1000, expiresAt: Int64? = 10_000_000) -> RelayMessage {
        RelayMessage(id: id, payload: ["n": .string(id)], priority: 10, collapseID: collapse, pushType: "alert", sentAt: sentAt,
                     expiresAt: expiresAt, phase: .stored)
    }

    func pushedIDs(_ out: [DeviceState.Outgoing]) -> [String] {
        out.compactMap { if case .push(let m) = $0 { m.id } else { nil } }
    }

    @Test func iosKeepsOnlyTheNewestStoredButRedeliversUnacked() {
        var device = DeviceState(token: "t", platform: .ios, appID: "a")
        var trace: [TraceEntry] = []
        // Delivered while connected, never acked.
        _ = device.connect(lastEventID: nil, now: 1000, trace: &trace)
        #expect(pushedIDs(device.accept(message("m0"), now: 1000, trace: &trace)) == ["m0"])
        device.disconnect()
        _ = device.accept(message("m1"), now: 1001, trace: &trace)
        _ = device.accept(message("m2"), now: 1002, trace: &trace)
        #expect(trace.contains { $0.messageID == "m1" && $0.event == "dropped" })
        // The unacked delivered one comes again, oldest first, then only the newest stored one.
        #expect(pushedIDs(device.connect(lastEventID: nil, now: 1003, trace: &trace)) == ["m0", "m2"])
        #expect(device.ack(["m0", "m2"], now: 1004, trace: &trace).count == 2)
        #expect(pushedIDs(device.connect(lastEventID: nil, now: 1005, trace: &trace)).isEmpty)
    }

    @Test func lastEventIDSkipsWhatTheClientHas() {
        var device = DeviceState(token: "t", platform: .android, appID: "a")
        var trace: [TraceEntry] = []
        for id in ["a", "b", "c"] { _ = device.accept(message(id), now: 1000, trace: &trace) }
        #expect(pushedIDs(device.connect(lastEventID: "b", now: 1001, trace: &trace)) == ["c"])
    }

    @Test func androidCollapseAndOverflow() {
        var device = DeviceState(token: "t", platform: .android, appID: "a")
        var trace: [TraceEntry] = []
        _ = device.accept(message("x1", collapse: "k"), now: 1, trace: &trace)
        _ = device.accept(message("x2", collapse: "k"), now: 2, trace: &trace)
        #expect(device.view(now: 3).pending.map(\.id) == ["x2"])
        for i in 0..<99 { _ = device.accept(message("m\(i)"), now: 4, trace: &trace) }
        #expect(device.view(now: 5).pending.count == 100)
        _ = device.accept(message("over"), now: 6, trace: &trace)
        #expect(device.view(now: 7).pending.isEmpty)
        #expect(device.connect(lastEventID: nil, now: 8, trace: &trace) == [.deletedMessages])
    }

    @Test func backlogDrainsInAckGatedBatchesOldestFirst() {
        var device = DeviceState(token: "t", platform: .android, appID: "a", ackBatch: 3)
        var trace: [TraceEntry] = []
        for i in 0..<7 { _ = device.accept(message("m\(i)"), now: 1, trace: &trace) }
        #expect(pushedIDs(device.connect(lastEventID: nil, now: 2, trace: &trace)) == ["m0", "m1", "m2"])
        // A live message waits behind the backlog.
        #expect(pushedIDs(device.accept(message("live"), now: 3, trace: &trace)).isEmpty)
        #expect(pushedIDs(device.ack(["m0"], now: 4, trace: &trace).next) == ["m3"])
        #expect(pushedIDs(device.ack(["m1", "m2", "m3"], now: 5, trace: &trace).next) == ["m4", "m5", "m6"])
        #expect(pushedIDs(device.ack(["m4", "m5", "m6"], now: 6, trace: &trace).next) == ["live"])
        // Backlog drained: live messages go at once, acked or not.
        #expect(pushedIDs(device.accept(message("a"), now: 7, trace: &trace)) == ["a"])
        #expect(pushedIDs(device.accept(message("b"), now: 7, trace: &trace)) == ["b"])
        #expect(pushedIDs(device.accept(message("c"), now: 7, trace: &trace)) == ["c"])
        #expect(pushedIDs(device.accept(message("d"), now: 7, trace: &trace)) == ["d"])
        // A reconnect sends the unacked again, in batches; the first delivery counts once.
        device.disconnect()
        #expect(pushedIDs(device.connect(lastEventID: nil, now: 8, trace: &trace)) == ["live", "a", "b"])
        #expect(device.view(now: 9).delivered == 12)
    }

    @Test func expiredMessagesAreNeverDelivered() {
        var device = DeviceState(token: "t", platform: .android, appID: "a")
        var trace: [TraceEntry] = []
        _ = device.accept(message("old", expiresAt: 1500), now: 1000, trace: &trace)
        _ = device.accept(message("now-or-never", sentAt: 1000, expiresAt: 1000), now: 1000, trace: &trace)
        #expect(trace.contains { $0.messageID == "now-or-never" && $0.event == "expired" })
        #expect(pushedIDs(device.connect(lastEventID: nil, now: 2000, trace: &trace)).isEmpty)
        #expect(trace.contains { $0.messageID == "old" && $0.event == "expired" })
    }

    /// A connected device that never acks gets its live pushes at once; they no longer pile up without bound.
    @Test func unackedMessagesAreBounded() {
        var device = DeviceState(token: "t", platform: .android, appID: "a")
        var trace: [TraceEntry] = []
        _ = device.connect(lastEventID: nil, now: 1000, trace: &trace)
        for n in 0..<(DeviceState.unackedLimit + 25) {
            #expect(pushedIDs(device.accept(message("m\(n)"), now: 1000, trace: &trace)) == ["m\(n)"])
        }
        #expect(device.messages.count == DeviceState.unackedLimit)
        #expect(device.messages.first?.id == "m25", "the oldest delivered-unacked went first")
        #expect(trace.filter { $0.event == "dropped" }.count == 25)
    }
}

/// The hub's memory of retired tokens is bounded: past the limit the oldest are forgotten (a send to one answers as for
/// an unknown token), and a retired device's state goes with it.
@Suite struct RelayHubBoundTests {
    @Test func retiredTokensAreBounded() async throws {
        let limit = 200
        let hub = try RelayHub(retiredLimit: limit)
        var first: String?
        let total = limit + limit / 4 + 10
        for _ in 0..<total {
            let token = await hub.register(platform: .android, appID: "a")
            if first == nil { first = token }
            _ = await hub.delete(token: token)
        }
        let stats = await hub.stats()
        #expect((stats["retired"] ?? 0) <= limit + limit / 4)
        #expect((stats["retired"] ?? 0) >= limit)
        #expect(await hub.isRetired(try #require(first)) == nil, "the oldest retired token is forgotten")
        #expect(stats["devices"] == 0)
    }
}
