import Foundation
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport
import TrioLoad
import TrioTesting

/// Measures how long `POST /__admin/studies/{id}/clock {"advance_seconds": 7 days}` takes when every participant
/// of a study has a weekly survey due in that week, i.e. how fast the scheduler walks due moments and hands the
/// pushes to the relay. Everything runs on loopback; the run is bounded by the participant count.
///
/// Usage: `advance-benchmark [--participants N] [--days D] [--concurrency C] [--database URL] [--instances K]`
/// (defaults 10000, 7, 64, `:memory:`, 1). With `--database postgres://...` and `--instances K`, K-1 more mock servers
/// run on the same database, their real-time tickers every 50 ms beside the advance (the count of pushes must still
/// come out exact).
/// Build everything in release first (`swift build -c release`): it starts the `mock-server` and `push-relay`
/// found next to it.
@main
struct AdvanceBenchmark {
    static let zones = ["America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles",
                        "America/Anchorage", "Pacific/Honolulu"]

    static func main() async throws {
        let args = CommandLine.arguments
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]), v > 0 else { return fallback }
            return v
        }
        let participants = option("--participants", 10_000)
        let days = option("--days", 7)
        let concurrency = option("--concurrency", 64)
        let instances = option("--instances", 1)
        let database = args.firstIndex(of: "--database").flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil } ?? ":memory:"
        let say = { (text: String) in FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

        let trio = try await Trio.start(.init(database: database, keepaliveSeconds: 25, serverArguments: ["--log-level", "warning"]))
        var others: [ServerProcess] = []
        do {
            for i in 1..<max(1, instances) {
                others.append(try await ServerProcess.launch(
                    executable: try Executables.locate("mock-server"),
                    arguments: ["--port", "0", "--relay-url", trio.relay.url, "--database", database, "--tick", "0.05", "--log-level", "warning",
                                "--parent-pid", String(getpid())],
                    logFile: FileManager.default.temporaryDirectory.appendingPathComponent("advance-benchmark-\(i).log")))
            }
            say("store \(database.hasPrefix("postgres") ? "postgres" : database), \(instances) instance(s)")
            say("servers: mock-server \(trio.server.url), push-relay \(trio.relay.url) (binaries in \(Executables.directory().path))")
            let study = try await trio.admin.createStudy(.init(name: "bench", scheduling: "server", clock: .init(frozenAt: "2026-05-03T00:00:00Z")))
            _ = try await trio.admin.createSurvey(study: study.studyID, .init(
                name: "Weekly", content: [["question_id": "q", "question_type": "free_response", "question_text": "?"]],
                schedules: [.weekly(dayOfWeek: 1, time: LocalTime(hour: 9, minute: 0), from: nil, until: nil)]))
            var t0 = ContinuousClock.now
            var credentials: [AdminWire.Credentials] = []
            while credentials.count < participants {
                credentials += try await trio.admin.createParticipants(study: study.studyID, .init(count: min(10_000, participants - credentials.count)))
            }
            say("created \(participants) participants in \(seconds(since: t0)) s")

            t0 = ContinuousClock.now
            let http = trio.http
            let relay = trio.relay.url, server = trio.server.url
            let options = RegisterLoadOptions(server: server, relay: relay, participants: credentials, model: .closed(concurrency: concurrency),
                                              duration: .zero)
            try await forEach(credentials.enumerated().map { $0 }, concurrency: concurrency) { index, who in
                if let error = await RegisterLoad.registerDevice(options, http: http, who: who, index: index, timeZone: zones[index % zones.count]) {
                    throw BenchError("registration failed: \(error)")
                }
            }
            let registerSeconds = seconds(since: t0)
            say("registered \(participants) devices (relay token + /register_user) in \(registerSeconds) s: \(Int(Double(participants) / registerSeconds)) registrations/s")

            t0 = ContinuousClock.now
            var request = try TransportRequest.json(server + "/__admin/studies/\(study.studyID)/clock", body: AdminWire.ClockRequest(advanceSeconds: days * 86400))
            request.timeout = .seconds(600)
            let response = try await http.send(request)
            let advanceSeconds = seconds(since: t0)
            guard response.status == 200 else { throw BenchError("advance answered \(response.status): \(response.text)") }
            let result = try response.decode(AdminWire.ClockResult.self)
            let sent = result.fired.filter { $0.status == "sent" }.count
            say("advance \(days) days: \(result.fired.count) pushes fired (\(sent) sent) in \(advanceSeconds) s (\(Int(Double(result.fired.count) / advanceSeconds)) pushes/s)")
            // Every push the relay accepted, whichever instance sent it.
            let metrics = try await http.send(TransportRequest(url: trio.relay.url + "/metrics")).text
            let accepted = metrics.split(separator: "\n").first { $0.hasPrefix("relay_messages_total{event=\"accepted\"} ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
            say("RESULT participants=\(participants) days=\(days) fired=\(result.fired.count) sent=\(sent) relay_accepted=\(accepted) advance_seconds=\(advanceSeconds)")
            for other in others { await other.stop() }
            await trio.stop()
            if accepted != sent { throw BenchError("the relay accepted \(accepted) pushes, the log says \(sent) sent") }
            if days % 7 == 0, sent != participants * days / 7 {
                throw BenchError("expected \(participants * days / 7) sent pushes, got \(sent)")
            }
        } catch {
            for other in others { await other.stop() }
            await trio.stop()
            throw error
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18).rounded(toPlaces: 3)
    }

    static func forEach<T: Sendable>(_ items: [T], concurrency: Int, _ body: @escaping @Sendable (T) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var iterator = items.makeIterator()
            for _ in 0..<concurrency {
                guard let next = iterator.next() else { break }
                group.addTask { try await body(next) }
            }
            while try await group.next() != nil {
                if let next = iterator.next() { group.addTask { try await body(next) } }
            }
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ text: String) { description = text }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let scale = Foundation.pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
