import Foundation
import HTTPTypes
import Hummingbird
import ServerSupport
import Synchronization
import SurveyWire

/// The mock server's injected faults (`PUT /__admin/faults`): per route, a probability, a delay range and a status,
/// each rule with its own seeded generator so a run can be replayed.
final class FaultTable: Sendable {
    private struct Rule {
        var spec: AdminWire.FaultRule
        var random: SeededRandom
    }

    private let rules = Mutex<[String: Rule]>([:])

    /// What a request to `path` gets: nil, or a delay and maybe a status. An exact route wins over a `/prefix/*` one.
    func decide(path: String) -> (delayMs: Int, status: Int?)? {
        // Every request passes here; without rules it costs one lock and no string work.
        return rules.withLock { table -> (Int, Int?)? in
            if table.isEmpty { return nil }
            let route = Self.route(of: path)
            let key = table[route] != nil ? route
                : table.keys.filter { $0.hasSuffix("/*") && route.hasPrefix(String($0.dropLast())) }.max { $0.count < $1.count }
            guard let key, var rule = table[key] else { return nil }
            defer { table[key] = rule }
            guard rule.random.chance(rule.spec.probability) else { return nil }
            let delay = rule.spec.delayMs.map { Int.random(in: $0.min...$0.max, using: &rule.random) } ?? 0
            return (delay, rule.spec.status)
        }
    }

    /// Adds or replaces the rule of its route.
    func set(_ spec: AdminWire.FaultRule) {
        rules.withLock { $0[Self.route(of: spec.route)] = Rule(spec: spec, random: SeededRandom(seed: spec.seed ?? 0)) }
    }

    /// Replaces every rule (`[]` clears).
    func replaceAll(_ specs: [AdminWire.FaultRule]) {
        rules.withLock { table in
            table = [:]
            for spec in specs { table[Self.route(of: spec.route)] = Rule(spec: spec, random: SeededRandom(seed: spec.seed ?? 0)) }
        }
    }

    /// `/upload`, `/upload/` and `/upload/ios` are one route; `/submit/*` covers every path under `/submit/`.
    static func route(of path: String) -> String {
        var route = String(RequestPath.path(of: path))
        while route.count > 1, route.hasSuffix("/") { route.removeLast() }
        if route.hasSuffix("/ios") { route.removeLast(4) }
        return route.isEmpty ? "/" : route
    }

    /// Checks one rule; the message of the first problem.
    static func validate(_ rule: AdminWire.FaultRule) -> (field: String, message: String)? {
        if !rule.route.hasPrefix("/") { return ("route", "route must be a path such as /upload") }
        if rule.route.hasPrefix("/__admin") { return ("route", "the admin API cannot be faulted (it is how faults are cleared)") }
        if !(0...1).contains(rule.probability) { return ("probability", "probability must be between 0 and 1") }
        if let status = rule.status, !(400...599).contains(status) { return ("status", "status must be 400-599") }
        if let delay = rule.delayMs, delay.min < 0 || delay.max < delay.min || delay.max > 60_000 {
            return ("delay_ms", "delay_ms needs 0 <= min <= max <= 60000")
        }
        if rule.status == nil && rule.delayMs == nil { return ("status", "give a status, a delay_ms, or both") }
        return nil
    }
}

/// Applies the fault table to every request outside `/__admin`.
struct FaultMiddleware<Context: RequestContext>: RouterMiddleware {
    let faults: FaultTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard !path.hasPrefix("/__admin"), let hit = faults.decide(path: path) else { return try await next(request, context) }
        if hit.delayMs > 0 { try await Task.sleep(for: .milliseconds(hit.delayMs)) }
        guard let status = hit.status else { return try await next(request, context) }
        throw APIError(HTTPResponse.Status(code: status), code: "injected_fault", "fault injected by PUT /__admin/faults for \(FaultTable.route(of: path))")
    }
}
