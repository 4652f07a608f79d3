import Foundation
import Testing
import Glibc
@testable import ClientSDK
import SurveyWire

@Suite struct PingBuilderTests {
    @Test func eventsAreRelativeToTheFirstEventAndIdsFollowTheSeq() {
        let config = SurveyClientConfiguration(serverURL: "http://s", relayURL: "http://r", storageDirectory: URL(fileURLWithPath: "/tmp"),
                                               patientID: "p", temporaryPassword: "x", platform: .ios)
        let t0 = WireTime.epochMillis(WireTime.parse("2026-05-04T14:00:00.500Z")!)
        let events: [ClientState.PendingEvent] = [.init(timestampMillis: t0, category: "survey", name: "received", extra: nil),
                                                  .init(timestampMillis: t0 + 1500, category: "survey", name: "submitted", extra: ["k": "v"])]
        let ping = PingBuilder.ping(events: events, seq: 7, clientID: "c", configuration: config, now: WireTime.parse("2026-05-04T14:00:02Z")!,
                                    reason: "flush", firstRunDate: "2026-05-04+00:00")
        #expect(ping.pingInfo.seq == 7)
        // What Glean's pipeline requires besides (PROTOCOL.md §8).
        #expect(ping.clientInfo.firstRunDate == "2026-05-04+00:00" && ping.clientInfo.architecture == HostOS.architecture)
        #expect(!HostOS.architecture.isEmpty && HostOS.architecture != "unknown")
        #expect(throws: Never.self) { try ping.checkRanges() }
        #expect(ping.pingInfo.startTime == "2026-05-04T14:00:00.500Z")
        #expect(ping.events.map(\.timestamp) == [0, 1500])
        #expect(ping.clientInfo.os == "iOS")
        let id = PingBuilder.documentID(clientID: "c", pingName: "events", seq: 7)
        #expect(id == PingBuilder.documentID(clientID: "c", pingName: "events", seq: 7))
        #expect(id != PingBuilder.documentID(clientID: "c", pingName: "events", seq: 8))
        #expect(UUID(uuidString: id) != nil)
    }

    /// `first_run_date` as Glean writes it: the local day and the zone's offset on it.
    @Test func firstRunDateIsTheLocalDayWithItsOffset() {
        let instant = WireTime.parse("2026-05-04T03:30:00Z")!
        #expect(PingBuilder.gleanDate(instant, timeZone: TimeZone(identifier: "America/Chicago")!) == "2026-05-03-05:00")
        #expect(PingBuilder.gleanDate(instant, timeZone: TimeZone(identifier: "Asia/Kolkata")!) == "2026-05-04+05:30")
        #expect(PingBuilder.gleanDate(instant, timeZone: TimeZone(identifier: "UTC")!) == "2026-05-04+00:00")
    }
}
