import ArgumentParser
import Foundation
import SurveyWire
import Transport

/// `survey-cli healthcheck`: exit 0 when every process `survey-cli up` started answers its health route; the container
/// image's HEALTHCHECK. It reads the URLs and the token from the READY file `up` keeps in its data directory.
struct Healthcheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Exit 0 when every process of a running `survey-cli up` answers (its data directory names them), 1 otherwise.")

    /// The file `survey-cli up` writes its READY line to (with the token), in its data directory, while it runs.
    static let readyFileName = "ready.json"

    @Option(help: "The data directory of the running `survey-cli up`.") var dataDir = "./.survey-trio"
    @Option(help: "Seconds each server has to answer.") var timeout = 3.0

    func validate() throws {
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60]") }
    }

    func run() async throws {
        let path = URL(fileURLWithPath: dataDir).appendingPathComponent(Self.readyFileName).path
        guard let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }),
              let ready = ReadyLine.parse(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            print("unhealthy: no READY line in \(path) (is `survey-cli up --data-dir \(dataDir)` running?)")
            throw ExitCode(1)
        }
        let checks = Self.checks(ready)
        let http = TransportClient(configuration: .init(defaultTimeout: .milliseconds(Int64(timeout * 1000)), connectTimeout: .seconds(2)))
        defer { http.shutdown() }
        var problems: [String] = []
        for (name, url) in checks {
            let headers = ready.token.map { [(name: "Authorization", value: "Bearer \($0)")] } ?? []
            do {
                let response = try await http.send(TransportRequest(url: url, headers: headers))
                if response.status != 200 { problems.append("\(name) answered \(response.status) at \(url)") }
            } catch {
                problems.append("\(name) did not answer at \(url): \(error)")
            }
        }
        guard problems.isEmpty else {
            print("unhealthy: " + problems.joined(separator: "; "))
            throw ExitCode(1)
        }
        print("healthy: " + checks.map(\.name).joined(separator: ", "))
    }

    /// Each process and the URL of its health route, reached on loopback whatever address it is bound to.
    static func checks(_ ready: ReadyLine) -> [(name: String, url: String)] {
        var checks: [(name: String, url: String)] = []
        if let server = ready.mockServer { checks.append(("mock-server", loopback(server) + "/__admin/health")) }
        for (index, relay) in (ready.pushRelays ?? ready.pushRelay.map { [$0] } ?? []).enumerated() {
            checks.append((index == 0 ? "push-relay" : "push-relay \(index)", loopback(relay) + "/__control/health"))
        }
        if let devices = ready.devices { checks.append(("devices API", loopback(devices) + "/__devices/health")) }
        return checks
    }

    /// `http://0.0.0.0:P` (a wildcard bind) as `http://127.0.0.1:P`; any other URL unchanged.
    static func loopback(_ url: String) -> String {
        url.replacingOccurrences(of: "://0.0.0.0:", with: "://127.0.0.1:").replacingOccurrences(of: "://[::]:", with: "://[::1]:")
    }
}
