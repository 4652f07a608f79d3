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
            ["question_type": "free_response", "question_text": "No id: not a question"],
            ["question_id": "c", "question_type": "checkbox", "question_text": "None listed", "answers": []],
        ], settings: [:])
        let stored = StoredSurvey(entry: entry, scheduleUUIDs: [], sentTime: "", receivedAt: "")
        let rows = SurveyClient.answerRows(for: stored.questions, answers: ["r": "B", "s": "4"])
        #expect(rows.map(\.questionID) == ["r", "s", "f", "c"])
        #expect(rows[0].answerOptions == "[A; B]")
        #expect(rows[1].questionText == "How much")
        #expect(rows[1].answerOptions == "0 - 10")
        #expect(rows[2].answer == "")
        #expect(rows[3].answerOptions == "[]")
    }

    @Test func questionsReadTheBuildersKeys() {
        let entry = SurveyEntry(id: "s", name: "Mood", surveyType: "tracking_survey", content: [
            ["question_id": "r", "question_type": "radio_button", "question_text": "Pick", "required": true,
             "answers": [["text": "A"], ["text": "B"]], "display_if": ["==": ["x", 1]]],
            ["question_id": "s", "question_type": "slider", "prompt": "How much", "min": "0", "max": "10"],
            ["question_id": "f", "question_type": "free_response", "question_text": "Age", "text_field_type": "NUMERIC"],
            ["question_id": "n", "question_type": "likert_7", "question_text": "Later type"],
            ["question_id": "t"],
        ], settings: [:])
        let stored = StoredSurvey(entry: entry, scheduleUUIDs: [], sentTime: "", receivedAt: "")
        let questions = stored.questions
        #expect(stored.name == "Mood" && stored.surveyType == "tracking_survey")
        #expect(questions.map(\.id) == ["r", "s", "f", "n"])
        #expect(questions[0].kind == .radioButton && questions[0].options == ["A", "B"] && questions[0].isRequired)
        #expect(questions[1].kind == .slider && questions[1].text == "How much" && questions[1].minimum == "0" && questions[1].maximum == "10")
        #expect(questions[1].options.isEmpty && !questions[1].isRequired)
        #expect(questions[2].textFieldType == "NUMERIC" && questions[2].takesAnswer)
        #expect(questions[3].kind.rawValue == "likert_7" && questions[3].takesAnswer)
    }
}
