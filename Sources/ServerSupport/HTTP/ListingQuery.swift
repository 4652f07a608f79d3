import Foundation
import Hummingbird

/// The query of a listing (push log, submissions, occurrences, telemetry, journals, the relay's trace): its own
/// parameters, and `wait=DURATION` with `min_count=N` (PROTOCOL.md §8: the answer comes once N items match, or when
/// the wait ends, with what there is). A parameter the listing does not take is refused (400 `unknown_parameter`),
/// as unknown body fields are: a filter silently ignored answered every item.
package struct ListingQuery: Sendable {
    /// The longest wait a listing takes.
    package static let maxWait: Duration = .seconds(60)
    /// Parameters every listing takes.
    package static let waitParameters: Set<String> = ["wait", "min_count"]

    private let values: [String: String]
    /// How long to wait for `minCount` items; nil = answer at once.
    package let wait: Duration?
    /// The items that end a wait (1 when only `wait` is given).
    package let minCount: Int

    /// Reads `request`'s query, refusing parameters outside `allowed` (and ``waitParameters``).
    package init(_ request: Request, allowed: Set<String>) throws(APIError) {
        try self.init(pairs: request.uri.queryParameters.map { (String($0.key), String($0.value)) }, allowed: allowed)
    }

    /// Reads query pairs (the first of a repeated name counts).
    package init(pairs: [(String, String)], allowed: Set<String>) throws(APIError) {
        var values: [String: String] = [:]
        for (name, value) in pairs {
            guard allowed.contains(name) || Self.waitParameters.contains(name) else {
                let known = (allowed.union(Self.waitParameters)).sorted().joined(separator: ", ")
                throw APIError(.badRequest, code: "unknown_parameter", "'\(name)' is not a parameter of this listing (it takes \(known))",
                               field: name)
            }
            if values[name] == nil { values[name] = value }
        }
        self.values = values
        if let text = values["wait"] {
            guard let duration = Self.duration(text), duration >= .zero, duration <= Self.maxWait else {
                throw APIError(.badRequest, code: "invalid_field", "wait must be a duration such as 500ms, 5s or 1m, at most 60s", field: "wait")
            }
            wait = duration
        } else {
            wait = nil
        }
        if let text = values["min_count"] {
            guard let count = Int(text), (1...100_000).contains(count) else {
                throw APIError(.badRequest, code: "invalid_field", "min_count must be an integer 1-100000", field: "min_count")
            }
            minCount = count
        } else {
            minCount = 1
        }
    }

    /// A parameter's value.
    package subscript(_ name: String) -> String? { values[name] }

    /// `250ms`, `5s`, `1.5s`, `1m`, or a bare number of seconds.
    package static func duration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let number = Double(text.dropLast(suffix.count)), number.isFinite else { return nil }
            return .milliseconds(Int64((number * scale * 1000).rounded()))
        }
        guard let seconds = Double(text), seconds.isFinite else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// The listing once it has ``minCount`` items, or when ``wait`` ends (at once without one). `fetch` runs again
    /// whenever `changes` moves (something was answered or recorded) and at least every `recheck`, for what changes
    /// without a request (a scheduler's pushes); the waiting task is suspended, never a thread.
    package func answer<Item>(changes: ObservedValue<UInt64>, recheck: Duration = .milliseconds(50),
                              _ fetch: () async throws -> [Item]) async throws -> [Item] {
        let deadline = ContinuousClock.now + (wait ?? .zero)
        while true {
            let seen = changes.value
            let items = try await fetch()
            let now = ContinuousClock.now
            if wait == nil || items.count >= minCount || now >= deadline || Task.isCancelled { return items }
            _ = await changes.wait(until: { $0 != seen }, timeout: min(recheck, deadline - now))
        }
    }
}
