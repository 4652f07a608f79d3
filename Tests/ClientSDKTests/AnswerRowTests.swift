import Foundation
import Testing
import Glibc
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
