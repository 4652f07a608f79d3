import ClientSDK
import Foundation

/// The SDK's local costs (issue: durable SDK). Usage: `sdk-benchmark [--events N] [--pings N]`.
/// - recording one telemetry event (appended to the on-disk event log), N events in a row;
/// - starting a client whose outbox holds N pending pings: `SurveyClient.init` plus reading its storage (`status()`).
/// Everything stays on local disk: the server URL points at a closed port, so pings stay queued.
@main
struct SDKBenchmark {
    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    static func main() async throws {
        let args = CommandLine.arguments
        let events = args.firstIndex(of: "--events").flatMap { Int(args[$0 + 1]) } ?? 20_000
        let pings = args.firstIndex(of: "--pings").flatMap { Int(args[$0 + 1]) } ?? 500
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-benchmark-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        func configuration(_ dir: String, batch: Int) -> SurveyClientConfiguration {
            SurveyClientConfiguration(serverURL: "http://127.0.0.1:9", relayURL: "http://127.0.0.1:9",
                                      storageDirectory: root.appendingPathComponent(dir), patientID: "p", temporaryPassword: "pw",
                                      telemetryBatchSize: batch)
        }

        // 1. Recording events.
        let recorder = try SurveyClient(configuration: configuration("events", batch: Int.max))
        let start = ContinuousClock.now
        for n in 0..<events { recorder.record(category: "benchmark", name: "event", extra: ["n": String(n)]) }
        let perEvent = seconds(ContinuousClock.now - start) / Double(events)
        let waiting = await recorder.status().eventsWaiting
        await recorder.close()
        print(String(format: "record one event: %.1f µs (%d events, %d waiting on disk)", perEvent * 1e6, events, waiting))

        // 2. A client with many pending pings.
        let filler = try SurveyClient(configuration: configuration("pings", batch: Int.max))
        for n in 0..<pings {
            filler.record(category: "benchmark", name: "ping", extra: ["n": String(n)])
            _ = try? await filler.flushTelemetry()
        }
        await filler.close()
        let opening = ContinuousClock.now
        let client = try SurveyClient(configuration: configuration("pings", batch: Int.max))
        let status = await client.status()
        let openSeconds = seconds(ContinuousClock.now - opening)
        await client.close()
        print(String(format: "start a client with %d pending pings (init + reading its storage): %.1f ms", status.pingsWaiting, openSeconds * 1000))
        print("command: swift build -c release --product sdk-benchmark && .build/release/sdk-benchmark --events \(events) --pings \(pings)")
    }
}
