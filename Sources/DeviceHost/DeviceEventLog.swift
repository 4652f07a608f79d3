import SurveyWire

/// A device's events, numbered from 1 (`seq`), the newest `capacity` kept: what `GET /__devices/{id}/events` reads.
/// A value type; the device appends, readers ask for what came after the `seq` they saw.
struct DeviceEventLog: Sendable, Equatable {
    /// Events kept at most (the oldest go; a reader that fell further behind gets what is left).
    static let capacity = 10_000
    /// Events answered at most at once.
    static let pageLimit = 1_000

    private(set) var events: [JSONValue] = []
    /// The `seq` of the newest event (0 before the first).
    private(set) var lastSeq = 0

    /// Appends an event object, numbering it.
    mutating func append(_ object: [String: JSONValue]) {
        lastSeq += 1
        var numbered = object
        numbered["seq"] = .number(Double(lastSeq))
        events.append(.object(numbered))
        if events.count > Self.capacity { events.removeFirst(events.count - Self.capacity) }
    }

    /// What a reader gets.
    struct Page: Sendable, Equatable {
        var events: [JSONValue]
        /// The `after` to ask with next.
        var next: Int
        /// Whether the page holds the awaited event (any event when none is named).
        var satisfied: Bool
    }

    /// The events after `after` (at most ``pageLimit``), up to and including the first named `until` when one is named.
    func page(after: Int, until: String? = nil) -> Page {
        let firstSeq = lastSeq - events.count + 1
        let start = max(0, after + 1 - firstSeq)
        guard start < events.count else { return Page(events: [], next: max(after, 0), satisfied: false) }
        var taken: [JSONValue] = []
        var found = until == nil
        for event in events[start...] {
            taken.append(event)
            if let until, event["event"]?.stringValue == until {
                found = true
                break
            }
            if taken.count >= Self.pageLimit { break }
        }
        let next = taken.last?["seq"]?.numberValue.map { Int($0) } ?? after
        return Page(events: taken, next: next, satisfied: found && !taken.isEmpty)
    }
}
