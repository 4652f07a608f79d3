import ArgumentParser
import Foundation
import SurveyWire
import Transport
import TrioTesting

/// `survey-cli trace`: one push's journey across the three processes.
struct TraceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Show one push's journey: scheduled, sent, accepted, stored, delivered, acked, fetched, answered, uploaded, decrypted.",
        discussion: """
            Joins the server's push log and request journal, the relay's trace of the message, the decrypted submissions and \
            (with --data-dir) the device's own events. Prints where the journey stopped. Exit codes: 0 the journey \
            completed, 1 it stopped somewhere (the output says where), 2 a server could not be asked, 64 bad flags.
            """)

    @Option(help: "Mock server URL.") var server: String
    @Option(help: "Push relay URL.") var relay: String
    @Option(help: "The participant whose latest push to trace.") var participant: String?
    @Option(help: "The push (uuid from the send log) to trace.") var push: String?
    @Option(help: "The device's directory (survey-cli device --data-dir), for the answered step.") var dataDir: String?
    @Flag(help: "Print the timeline as JSON: {\"steps\": [{\"step\", \"at\", \"process\", \"detail\"}], \"stopped_at\"?}.") var json = false
    @Option(help: "Also write the timeline, drawn, as a self-contained HTML page.") var html: String?

    func validate() throws {
        guard (participant == nil) != (push == nil) else { throw ValidationError("give exactly one of --participant and --push") }
    }

    func run() async throws {
        let http = TransportClient(configuration: .init(defaultTimeout: .seconds(30), connectTimeout: .seconds(5)))
        defer { http.shutdown() }
        let trace: PushTrace
        do {
            trace = try await PushTrace.make(server: server, relay: relay, participant: participant, push: push,
                                             deviceDirectory: dataDir.map { URL(fileURLWithPath: $0) }, http: http)
        } catch {
            FileHandle.standardError.write(Data("trace: \(error)\n".utf8))
            throw ExitCode(2)
        }
        if let html { try Data(trace.html().utf8).write(to: URL(fileURLWithPath: html)) }
        if json {
            print(String(decoding: try WireJSON.encode(trace), as: UTF8.self))
        } else {
            print(trace.text())
        }
        if trace.stoppedAt != nil { throw ExitCode(1) }
    }
}
