// The README's "In a Swift test suite" example is the code between the README-EXAMPLE markers below, quoted verbatim
// (ReadmeExampleTests checks the README against this file), so it compiles and runs as shown.
// README-EXAMPLE-BEGIN
import ClientSDK
import Foundation
import Scheduling
import SurveyWire
import Testing
import TrioTesting

@Test func aPushedSurveyIsAnsweredAndDecrypted() async throws {
    try await Trio.with { trio in                       // both processes, torn down even if the test throws
        let study = try await trio.admin.createStudy(.init(name: "S", timezone: "America/Chicago", scheduling: "server",
                                                           clock: .init(frozenAt: "2026-05-04T13:59:00Z")))
        let who = try await trio.admin.createParticipants(study: study.studyID)[0]
        let mood = AdminWire.CreateSurvey(
            name: "Mood",
            content: [["question_id": "q1", "question_type": "slider", "question_text": "Mood?", "min": "0", "max": "10"]],
            schedules: [.absolute(date: LocalDate("2026-05-04")!, time: LocalTime(hour: 9, minute: 0))])   // 14:00 UTC
        let surveyID = try await trio.admin.createSurvey(study: study.studyID, mood)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        let device = try SurveyClient(configuration: .init(serverURL: trio.server.url, relayURL: trio.relay.url,
            storageDirectory: dir, patientID: who.patientID, temporaryPassword: who.password, timeZone: "America/Chicago"))
        let events = EventRecorder(device)
        try await device.start()
        _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 120)   // returns once pushes are handed over
        let (survey, _) = try await events.survey()
        try await device.submit(answers: ["q1": "7"], for: survey.surveyID)
        await device.close()
        let submissions = try await trio.admin.submissions(study: study.studyID)
        #expect(submissions.map(\.surveyID) == [surveyID])
    }
}
// README-EXAMPLE-END

/// The README quotes the example above exactly.
@Test func theReadmeQuotesTheExampleTestVerbatim() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let begin = try #require(source.range(of: "// README-EXAMPLE-BEGIN\n"))
    let end = try #require(source.range(of: "// README-EXAMPLE-END", range: begin.upperBound..<source.endIndex))
    let example = String(source[begin.upperBound..<end.lowerBound])
    #expect(readme.contains("```swift\n" + example + "```"), "README.md must quote IntegrationTests/ReadmeExampleTests.swift's example verbatim")
}
