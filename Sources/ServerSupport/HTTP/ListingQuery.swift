import Foundation
import Hummingbird
import SurveyWire

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

    /// Reads `request`'s query, refusing parameters outside `allowed` (and ``waitParameters``). The pairs come from
    /// ``QueryValue/pairs(query:)``, the fuzzed reading of a query.
    package init(_ request: Request, allowed: Set<String>) throws(APIError) {
        try self.init(pairs: request.uri.query.map { QueryValue.pairs(query: Substring($0)) }?.map { ($0.name, $0.value) } ?? [], allowed: allowed)
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
            guard let duration = QueryValue.duration(text, in: .zero...Self.maxWait) else {
                throw APIError(.badRequest, code: "invalid_field", "wait must be a duration such as 500ms, 5s or 1m, at most 60s", field: "wait")
            }
            wait = duration
        } else {
            wait = nil
        }
        minCount = try Self.integer(values["min_count"], "min_count", in: 1...100_000) ?? 1
    }

    /// A parameter's value, as text (for names, ids and filters; numbers go through ``integer(_:in:)``).
    package subscript(_ name: String) -> String? { values[name] }

    /// A parameter's value as an integer in `range` (nil when absent); anything else is 400 `invalid_field`.
    package func integer(_ name: String, in range: ClosedRange<Int>) throws(APIError) -> Int? {
        try Self.integer(values[name], name, in: range)
    }

    static func integer(_ text: String?, _ name: String, in range: ClosedRange<Int>) throws(APIError) -> Int? {
        guard let text else { return nil }
        guard let value = QueryValue.integer(text, in: range) else {
            throw APIError(.badRequest, code: "invalid_field", "\(name) must be an integer \(range.lowerBound)-\(range.upperBound)", field: name)
        }
        return value
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
