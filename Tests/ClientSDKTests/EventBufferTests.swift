import Foundation
import Testing
import Glibc
@testable import ClientSDK
import SurveyWire

/// The events buffer is bounded: a consumer that reads nothing while 40 events happen finds only the newest.
@Suite struct EventBufferTests {
    @Test func anUnreadEventsStreamKeepsOnlyTheNewestUpToItsLimit() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-events-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        // Nothing listens on port 1: every fetch fails at once, and each push still reports `pushReceived`.
        var config = SurveyClientConfiguration(serverURL: "http://127.0.0.1:1", relayURL: nil, storageDirectory: root,
                                               patientID: "p1", temporaryPassword: "pw", heartbeatInterval: nil, pushSource: .external)
        config.eventBufferLimit = 5
        let client = try SurveyClient(configuration: config)
        for index in 0..<20 {
            let push = SurveyPush(surveyIDs: ["s\(index)"], sentTime: "2026-05-04T14:00:00Z", nonce: "n\(index)", surveyUUIDs: ["s\(index)": ["u\(index)"]])
            _ = try? await client.receive(push: push.dataFields())
        }
        await client.close()
        var seen: [SurveyClientEvent] = []
        for await event in client.events { seen.append(event) }
        #expect(seen.count == 5, "\(seen)")
        // The newest survive: the last push's report is among them, the first push's is not.
        #expect(seen.contains(.pushReceived(messageID: "external-n19", surveyIDs: ["s19"], sentTime: "2026-05-04T14:00:00Z")))
        #expect(!seen.contains(.pushReceived(messageID: "external-n0", surveyIDs: ["s0"], sentTime: "2026-05-04T14:00:00Z")))
    }
}
