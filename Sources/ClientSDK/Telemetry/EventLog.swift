import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SurveyWire

/// Telemetry events on disk, appended as they are recorded (one JSON line each, no rewrite of anything else).
///
/// `telemetry/events.jsonl` collects new events. To make ping number `seq`, the file is renamed to
/// `telemetry/events.<seq>.jsonl` (sealed), the ping is written from it, the next `seq` is saved, and only then is the
/// sealed file deleted. A crash anywhere in between leaves either the open log (nothing lost) or the sealed file for a
/// `seq` not yet saved, which is made into the same ping again (same document id; the server keeps it once).
///
/// Recording is the hot path (an app records from any thread): the open log's descriptor stays open between events and
/// the line is written without a `JSONEncoder`, under a mutex rather than through the client's actor. Sealing and
/// deleting close the descriptor under the same mutex, so no event is ever appended to a sealed batch.
final class EventLog: Sendable {
    let directory: URL
    let openURL: URL

    private struct Open {
        /// The open log's descriptor (`O_APPEND`), -1 until the next event.
        var fd: Int32 = -1
        /// Events in the open log.
        var count = 0
        /// False while telemetry upload is disabled, and after `close()`: events are dropped.
        var recording = true
        /// A `max_capacity` ping was asked for since the last seal.
        var batchRequested = false
        /// The client closed: the directory may be another client's now, so nothing in it is renamed or deleted.
        var closed = false

        mutating func closeDescriptor() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }

        /// The open log was sealed or deleted: the next event starts a new one.
        mutating func startOver() {
            closeDescriptor()
            count = 0
            batchRequested = false
        }
    }
    private let open: Mutex<Open>

    func sealedURL(_ seq: Int) -> URL { directory.appendingPathComponent("events.\(seq).jsonl") }

    init(directory: URL) throws(SurveyClientError) {
        self.directory = directory
        openURL = directory.appendingPathComponent("events.jsonl")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot create \(directory.path): \(error)")
        }
        open = Mutex(Open(count: Self.events(in: openURL).events.count))
    }

    deinit { open.withLock { $0.closeDescriptor() } }

    /// What `append` tells the caller.
    enum Appended: Equatable {
        /// Not recording (upload disabled or closed): nothing written.
        case dropped
        /// Written; `waiting` events are in the open log, and `batchDue` is true once per batch when it reaches the size
        /// asked for.
        case written(waiting: Int, batchDue: Bool)
    }

    /// Appends one event: a single `write` on an `O_APPEND` descriptor (not fsynced, like Glean's event store).
    /// - Parameter batchSize: the open-log size at which a `max_capacity` ping is due.
    @discardableResult
    func append(_ event: ClientState.PendingEvent, batchSize: Int = .max) throws(SurveyClientError) -> Appended {
        let line = Self.line(event)
        let path = openURL.path
        return try open.withLock { (state: inout Open) throws(SurveyClientError) -> Appended in
            guard state.recording else { return .dropped }
            if state.fd < 0 {
                state.fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
                guard state.fd >= 0 else {
                    throw SurveyClientError(code: "storage", message: "cannot open \(path): \(String(cString: strerror(errno)))")
                }
            }
            let fd = state.fd
            let ok = line.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress, raw.count) == raw.count }
            guard ok else { throw SurveyClientError(code: "storage", message: "cannot append to \(path): \(String(cString: strerror(errno)))") }
            state.count += 1
            let due = state.count >= batchSize && !state.batchRequested
            if due { state.batchRequested = true }
            return .written(waiting: state.count, batchDue: due)
        }
    }

    /// The event's JSON line, newline included: the text `JSONValue.compactText` gives for it (sorted keys, no `extra`
    /// when nil), laid out directly rather than through a `JSONValue` tree or a `JSONEncoder`.
    static func line(_ event: ClientState.PendingEvent) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + event.category.utf8.count + event.name.utf8.count)
        out.append(contentsOf: #"{"category":"#.utf8)
        JSONValue.appendString(event.category, to: &out)
        if let extra = event.extra {
            out.append(contentsOf: #","extra":{"#.utf8)
            var first = true
            for key in extra.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                JSONValue.appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONValue.appendString(extra[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: #","name":"#.utf8)
        JSONValue.appendString(event.name, to: &out)
        out.append(contentsOf: #","timestampMillis":"#.utf8)
        out.append(contentsOf: String(event.timestampMillis).utf8)
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// Starts or stops recording (telemetry upload turned on or off).
    func setRecording(_ on: Bool) { open.withLock { $0.recording = on && !$0.closed } }

    /// Stops recording for good and closes the descriptor (the client is closing).
    func close() {
        open.withLock { state in
            state.recording = false
            state.closed = true
            state.closeDescriptor()
        }
    }

    /// Events recorded and not yet sealed into a ping.
    var openCount: Int { open.withLock { $0.count } }

    /// The events of a log file; a torn or unreadable line (a crash mid-append) is skipped and counted.
    static func events(in url: URL) -> (events: [ClientState.PendingEvent], skipped: Int) {
        guard let data = try? Data(contentsOf: url) else { return ([], 0) }
        var events: [ClientState.PendingEvent] = []
        var skipped = 0
        for line in data.split(separator: 10) where !line.isEmpty {
            if let event = try? WireJSON.decode(ClientState.PendingEvent.self, from: Data(line)) { events.append(event) } else { skipped += 1 }
        }
        return (events, skipped)
    }

    /// Seals the open log as ping `seq`'s batch (or finds the batch a crash left). Nil when there is nothing to send.
    func seal(seq: Int) throws(SurveyClientError) -> URL? {
        let sealed = sealedURL(seq)
        if FileManager.default.fileExists(atPath: sealed.path) { return sealed }
        let path = openURL.path
        return try open.withLock { (state: inout Open) throws(SurveyClientError) -> URL? in
            guard !state.closed else { throw SurveyClientError.closed }
            state.closeDescriptor()
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            guard rename(path, sealed.path) == 0 else {
                throw SurveyClientError(code: "storage", message: "cannot seal \(path): \(String(cString: strerror(errno)))")
            }
            state.startOver()
            return sealed
        }
    }

    /// Deletes every recorded event, sealed or not (opting out).
    func deleteAll() {
        open.withLock { state in
            guard !state.closed else { return }
            state.startOver()
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names where name.hasPrefix("events.") && name.hasSuffix(".jsonl") {
                unlink(directory.appendingPathComponent(name).path)
            }
        }
    }

    /// Deletes sealed batches of pings before `seq` (already written as pings).
    func dropSealed(before seq: Int) {
        guard !open.withLock({ $0.closed }) else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix("events.") && name.hasSuffix(".jsonl") {
            let middle = name.dropFirst("events.".count).dropLast(".jsonl".count)
            if let n = Int(middle), n < seq { unlink(directory.appendingPathComponent(name).path) }
        }
    }
}
