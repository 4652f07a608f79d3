import ClientSDK
import Foundation
import Scheduling
import SurveyCrypto
import SurveyWire
import Testing
import Transport
import TrioTesting

/// Every integration test starts its own trio of processes; they run one at a time (each already uses both cores),
/// while the unit tests run in parallel beside them.
@Suite(.serialized) enum Integration {}

/// Monday 2026-05-04 08:59 in America/Chicago (CDT, UTC-5).
let mondayBeforeNineChicago = "2026-05-04T13:59:00Z"

let moodSurvey = AdminWire.CreateSurvey(
    name: "Weekly mood",
    content: [
        ["question_id": "intro", "question_type": "info_text_box", "question_text": "Hello"],
        ["question_id": "mood", "question_type": "slider", "question_text": "How is your mood?", "min": "0", "max": "10"],
        ["question_id": "sleep", "question_type": "radio_button", "question_text": "Slept well?", "answers": [["text": "Yes"], ["text": "No"]]],
        ["question_id": "note", "question_type": "free_response", "question_text": "Anything, to add?", "text_field_type": "SINGLE_LINE_TEXT"],
    ],
    schedules: [.weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil)])

/// The mood survey once more, due only on Monday 2026-05-04 at 10:00 local.
let tenOClockSurvey: AdminWire.CreateSurvey = {
    var survey = moodSurvey
    survey.name = "Ten o'clock"
    survey.schedules = [.absolute(date: LocalDate("2026-05-04")!, time: LocalTime(hour: 10, minute: 0))]
    return survey
}()

func temporaryDirectory(_ name: String = "device") -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("trio-tests-\(name)-\(UUID().uuidString.prefix(8))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The spec a device stored for `surveyID`, as the server served it (`surveys/<id>.json` under its storage directory).
func storedSpec(_ storage: URL, _ surveyID: String) throws -> JSONValue? {
    let data = try Data(contentsOf: storage.appendingPathComponent("surveys").appendingPathComponent("\(surveyID).json"))
    return try WireJSON.decode(JSONValue.self, from: data)["entry"]
}

func clientConfiguration(_ trio: Trio, _ credentials: AdminWire.Credentials, platform: SurveyClientConfiguration.Platform = .android,
                         storage: URL = temporaryDirectory(), timeZone: String = "America/Chicago") -> SurveyClientConfiguration {
    SurveyClientConfiguration(serverURL: trio.server.url, relayURL: trio.relay.url, storageDirectory: storage,
                              patientID: credentials.patientID, temporaryPassword: credentials.password,
                              newPassword: "new-" + credentials.password, platform: platform, timeZone: timeZone,
                              telemetryURL: trio.server.url, featuresURL: trio.server.url)
}

/// A server-scheduled study frozen at Monday 08:59 Chicago with one participant and the weekly mood survey.
struct StudySetup {
    var study: AdminWire.Study
    var credentials: AdminWire.Credentials
    var surveyID: String

    static func make(_ trio: Trio, scheduling: String = "server", survey: AdminWire.CreateSurvey = moodSurvey) async throws -> StudySetup {
        let study = try await trio.admin.createStudy(.init(name: "Test study", timezone: "America/Chicago", scheduling: scheduling,
                                                           clock: .init(frozenAt: mondayBeforeNineChicago)))
        let credentials = try await trio.admin.createParticipants(study: study.studyID)[0]
        let surveyID = try await trio.admin.createSurvey(study: study.studyID, survey)
        return StudySetup(study: study, credentials: credentials, surveyID: surveyID)
    }
}

/// A mobile-API form post as a real app would send it (credentials hashed as Beiwe does).
func mobilePost(_ trio: Trio, _ path: String, patientID: String?, password: String?, deviceID: String? = "device-1",
                extra: [(String, String)] = []) async throws -> TransportResponse {
    var form = FormBody()
    if let patientID { form["patient_id"] = patientID }
    if let password { form["password"] = BeiwePassword.deviceHash(password) }
    if let deviceID { form["device_id"] = deviceID }
    for (k, v) in extra { form[k] = v }
    return try await trio.http.send(.form(trio.server.url + path, form.encoded()))
}

func errorCode(_ response: TransportResponse) -> String? {
    (try? response.decode(ErrorBody.self))?.error.code
}

/// Polls until `condition` holds or the timeout passes.
func eventually(_ timeout: Duration = .seconds(5), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Runs `survey-cli ARGUMENTS` and returns its exit status and stdout (stderr discarded), without holding a thread of
/// the cooperative pool while it runs (`ChildProcess`).
func runSurveyCLI(_ arguments: [String]) async throws -> (Int32, String) {
    let result = try await ChildProcess.run(Executables.url("survey-cli"), arguments)
    return (result.status, result.output)
}
