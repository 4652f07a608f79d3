import Foundation
import Testing
@testable import ClientSDK
import SurveyWire

@Suite struct AnswerRowTests {
    @Test func rowsFollowTheSpecAndSkipInfoBoxes() {
        let entry = SurveyEntry(id: "s", name: "S", surveyType: "tracking_survey", content: [
            ["question_id": "i", "question_type": "info_text_box", "question_text": "Hi"],
            ["question_id": "r", "question_type": "radio_button", "question_text": "Pick", "answers": [["text": "A"], ["text": "B"]]],
            ["question_id": "s", "question_type": "slider", "prompt": "How much", "min": "0", "max": "10"],
            ["question_id": "f", "question_type": "free_response", "question_text": "Say"],
        ], settings: [:])
        let rows = SurveyClient.answerRows(for: entry, answers: ["r": "B", "s": "4"])
        #expect(rows.map(\.questionID) == ["r", "s", "f"])
        #expect(rows[0].answerOptions == "[A; B]")
        #expect(rows[1].questionText == "How much")
        #expect(rows[1].answerOptions == "0 - 10")
        #expect(rows[2].answer == "")
    }
}

@Suite struct PingBuilderTests {
    @Test func eventsAreRelativeToThePingStartAndSeqAdvances() {
        let config = SurveyClientConfiguration(serverURL: "http://s", relayURL: "http://r", storageDirectory: URL(fileURLWithPath: "/tmp"),
                                               patientID: "p", temporaryPassword: "x", platform: .ios)
        var state = ClientState(deviceID: "d", passwordHash: "h", clientID: "c")
        state.pendingStart = "2026-05-04T14:00:00.000Z"
        state.pendingEvents = [.init(timestampMillis: WireTime.epochMillis(WireTime.parse("2026-05-04T14:00:01.500Z")!),
                                     category: "survey", name: "submitted", extra: ["k": "v"])]
        let ping = PingBuilder.ping(state: &state, configuration: config, now: WireTime.parse("2026-05-04T14:00:02Z")!, reason: "flush")
        #expect(ping.pingInfo.seq == 0)
        #expect(ping.events.map(\.timestamp) == [1500])
        #expect(ping.clientInfo.os == "iOS")
        #expect(state.pingSeq == 1)
        #expect(state.pendingEvents.isEmpty)
    }
}

@Suite struct ClientStoreTests {
    @Test func writesAreWholeFilesAndIdsAreMadeSafe() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-store-\(UUID().uuidString.prefix(8))")
        let store = try ClientStore(root: dir)
        try store.write(["a": 1], to: store.stateURL)
        #expect(try store.read([String: Int].self, from: store.stateURL) == ["a": 1])
        #expect(store.surveyURL("../../etc/passwd").lastPathComponent == ".._.._etc_passwd.json")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("tmp") }
        #expect(leftovers.isEmpty)
        try Data("{not json".utf8).write(to: store.stateURL)
        #expect(throws: SurveyClientError.self) { try store.read([String: Int].self, from: store.stateURL) }
    }
}
