// participant-tool: one participant's phone on a Linux machine. It registers with a Beiwe-compatible study server,
// takes its pushes from the relay, answers every survey that arrives with one value, and prints what happens as JSON
// lines. It exits 0 after `--surveys N` answered surveys, 1 on an error, 2 when `--within` runs out first.
//
//   participant-tool --server URL --relay URL --patient-id ID --password PW [--timezone ZONE] [--answer VALUE]
//                    [--surveys N] [--within SECONDS] [--storage DIR]
import ClientSDK
import Foundation

/// The command line as `--name value` pairs.
struct Options {
    var values: [String: String] = [:]

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let name = rest.popFirst() {
            guard name.hasPrefix("--"), let value = rest.popFirst() else { throw ToolError("expected --name value, got \(name)") }
            values[String(name.dropFirst(2))] = value
        }
    }

    func required(_ name: String) throws -> String {
        guard let value = values[name] else { throw ToolError("--\(name) is required") }
        return value
    }
}

struct ToolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One JSON line on stdout.
func say(_ fields: [String: String]) {
    let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

func run() async throws -> Int32 {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    let wanted = Int(options.values["surveys"] ?? "1") ?? 1
    let within = Double(options.values["within"] ?? "60") ?? 60
    let answer = options.values["answer"] ?? "5"
    let storage = URL(fileURLWithPath: options.values["storage"]
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("participant-\(UUID().uuidString)").path)
    let client = try SurveyClient(configuration: .init(
        serverURL: try options.required("server"), relayURL: try options.required("relay"), storageDirectory: storage,
        patientID: try options.required("patient-id"), temporaryPassword: try options.required("password"),
        timeZone: options.values["timezone"] ?? "UTC"))
    try await client.start()
    say(["event": "started", "push_token": await client.pushToken ?? ""])

    // The client's events until enough surveys are answered, or the time runs out.
    let answered = await withTaskGroup(of: Int?.self) { group in
        group.addTask {
            var count = 0
            for await event in client.events {
                switch event {
                case .registered(let study, _, let zone):
                    say(["event": "registered", "study_id": study, "timezone": zone])
                case .pushReceived(let id, let surveys, let sentTime):
                    say(["event": "push_received", "message_id": id, "surveys": surveys.joined(separator: ","), "sent_time": sentTime])
                case .surveyAvailable(let survey):
                    let answers = Dictionary(uniqueKeysWithValues: survey.questions.filter(\.takesAnswer).map { ($0.id, answer) })
                    do {
                        try await client.submit(answers: answers, for: survey.surveyID)
                    } catch {
                        say(["event": "error", "message": "\(error)"])
                    }
                case .submitted(let survey, _):
                    count += 1
                    say(["event": "submitted", "survey_id": survey])
                    if count >= wanted { return count }
                case .error(let error):
                    say(["event": "error", "message": "\(error)"])
                default:
                    break
                }
            }
            return count
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(within))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    await client.close()
    guard let answered else {
        say(["event": "timeout", "seconds": String(within)])
        return 2
    }
    return answered >= wanted ? 0 : 1
}

do {
    exit(try await run())
} catch {
    say(["event": "error", "message": "\(error)"])
    exit(1)
}
