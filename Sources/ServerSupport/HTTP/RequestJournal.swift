import Foundation
import Synchronization
import SurveyWire

/// The last requests a server answered, as WireMock's request journal: method, path, status, duration, and the
/// participant or device token it concerned. Bodies are never kept. Holds at most `capacity` entries (the oldest go).
package final class RequestJournal: Sendable {
    /// One answered request (the wire type, shared with the clients that read journals).
    package typealias Entry = JournalWire.Entry
    /// What `GET .../requests` answers.
    package typealias Listing = JournalWire.Listing

    /// Entries kept by default.
    package static let defaultCapacity = 1_000
    /// The most a listing returns (and the `limit` query parameter's maximum).
    package static let maxLimit = 10_000

    /// What a request concerned, filled in while it is handled (a route that reads the participant from a form body
    /// says so through ``current``).
    package final class Subject: Sendable {
        private let value = Mutex<(participant: String?, token: String?, study: String?)>((nil, nil, nil))
        package init() {}
        package var study: String? {
            get { value.withLock { $0.study } }
            set { value.withLock { $0.study = newValue } }
        }
        package var participant: String? {
            get { value.withLock { $0.participant } }
            set { value.withLock { $0.participant = newValue } }
        }
        package var token: String? {
            get { value.withLock { $0.token } }
            set { value.withLock { $0.token = newValue } }
        }
    }

    /// The subject of the request being handled on this task (set by ``RequestJournalMiddleware``).
    @TaskLocal package static var current: Subject?

    private struct Ring {
        var entries: [Entry] = []
        var next = 0
    }

    package let capacity: Int
    private let ring = Mutex(Ring())
    /// Moves on every entry recorded: what a listing's `wait` watches (``ListingQuery``).
    package let changes = ObservedValue<UInt64>(0)

    package init(capacity: Int = RequestJournal.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    package func record(_ entry: Entry) {
        ring.withLock { ring in
            if ring.entries.count < capacity {
                ring.entries.append(entry)
            } else {
                ring.entries[ring.next] = entry
            }
            ring.next = (ring.next + 1) % capacity
        }
        changes.update { $0 &+= 1 }
    }

    /// Records a request answered outside the router (the relay's event streams and health).
    package func record(method: String, path: String, status: Int, started: ContinuousClock.Instant, participant: String? = nil, token: String? = nil,
                        study: String? = nil) {
        let millis = (ContinuousClock.now - started).seconds * 1000
        record(Entry(at: WireTime.format(Date(), milliseconds: true), method: method, path: path, status: status,
                     durationMs: (millis * 1000).rounded() / 1000, participant: participant, token: token, study: study))
    }

    /// What a listing keeps (every condition given must hold).
    package struct Filter: Sendable {
        package var pathPrefix: String?
        package var status: Int?
        package var participant: String?
        package var token: String?
        package var study: String?
        /// Entries at or after this instant.
        package var since: Date?
        package init(pathPrefix: String? = nil, status: Int? = nil, participant: String? = nil, token: String? = nil,
                     study: String? = nil, since: Date? = nil) {
            self.pathPrefix = pathPrefix
            self.status = status
            self.participant = participant
            self.token = token
            self.study = study
            self.since = since
        }

        func keeps(_ entry: Entry) -> Bool {
            if let pathPrefix, !entry.path.hasPrefix(pathPrefix) { return false }
            if let status, entry.status != status { return false }
            if let participant, entry.participant != participant { return false }
            if let token, entry.token != token { return false }
            if let study, entry.study != study { return false }
            if let since, (WireTime.parse(entry.at) ?? .distantPast) < since { return false }
            return true
        }
    }

    /// Newest first: at most `limit` entries `filter` keeps.
    package func entries(limit: Int = 100, _ filter: Filter) -> [Entry] {
        let all: [Entry] = ring.withLock { ring in
            guard ring.entries.count == capacity else { return ring.entries }
            return Array(ring.entries[ring.next...] + ring.entries[..<ring.next])
        }
        var result: [Entry] = []
        for entry in all.reversed() where filter.keeps(entry) {
            result.append(entry)
            if result.count >= limit { break }
        }
        return result
    }

    package func clear() {
        ring.withLock { $0 = Ring() }
    }
}
