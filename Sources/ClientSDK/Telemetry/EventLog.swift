import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SurveyWire

/// Telemetry events on disk, appended as they are recorded (one JSON line each, no rewrite of anything else).
///
/// `telemetry/events.jsonl` collects new events. To make ping number `seq`, the file is renamed to
/// `telemetry/events.<seq>.jsonl` (sealed), the ping is written from it, the next `seq` is saved, and only then is the
/// sealed file deleted. A crash anywhere in between leaves either the open log (nothing lost) or the sealed file for a
/// `seq` not yet saved, which is made into the same ping again (same document id; the server keeps it once).
struct EventLog: Sendable {
    let directory: URL

    var openURL: URL { directory.appendingPathComponent("events.jsonl") }
    func sealedURL(_ seq: Int) -> URL { directory.appendingPathComponent("events.\(seq).jsonl") }

    init(directory: URL) throws(SurveyClientError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot create \(directory.path): \(error)")
        }
    }

    /// Appends one event (a single `write` on an `O_APPEND` descriptor; not fsynced, like Glean's event store).
    func append(_ event: ClientState.PendingEvent) throws(SurveyClientError) {
        guard var line = try? WireJSON.encode(event) else {
            throw SurveyClientError(code: "storage", message: "cannot encode a telemetry event")
        }
        line.append(10)
        let fd = open(openURL.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw SurveyClientError(code: "storage", message: "cannot open \(openURL.path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let ok = line.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress, raw.count) == raw.count }
        guard ok else { throw SurveyClientError(code: "storage", message: "cannot append to \(openURL.path): \(String(cString: strerror(errno)))") }
    }

    /// The events of a log file; a torn or unreadable line (a crash mid-append) is skipped and counted.
    func events(in url: URL) -> (events: [ClientState.PendingEvent], skipped: Int) {
        guard let data = try? Data(contentsOf: url) else { return ([], 0) }
        var events: [ClientState.PendingEvent] = []
        var skipped = 0
        for line in data.split(separator: 10) where !line.isEmpty {
            if let event = try? WireJSON.decode(ClientState.PendingEvent.self, from: Data(line)) { events.append(event) } else { skipped += 1 }
        }
        return (events, skipped)
    }

    /// Events recorded and not yet sealed into a ping.
    var openCount: Int { events(in: openURL).events.count }

    /// Seals the open log as ping `seq`'s batch (or finds the batch a crash left). Nil when there is nothing to send.
    func seal(seq: Int) throws(SurveyClientError) -> URL? {
        let sealed = sealedURL(seq)
        if FileManager.default.fileExists(atPath: sealed.path) { return sealed }
        guard FileManager.default.fileExists(atPath: openURL.path) else { return nil }
        guard rename(openURL.path, sealed.path) == 0 else {
            throw SurveyClientError(code: "storage", message: "cannot seal \(openURL.path): \(String(cString: strerror(errno)))")
        }
        return sealed
    }

    /// Deletes every recorded event, sealed or not (opting out).
    func deleteAll() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix("events.") && name.hasSuffix(".jsonl") {
            unlink(directory.appendingPathComponent(name).path)
        }
    }

    /// Deletes sealed batches of pings before `seq` (already written as pings).
    func dropSealed(before seq: Int) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix("events.") && name.hasSuffix(".jsonl") {
            let middle = name.dropFirst("events.".count).dropLast(".jsonl".count)
            if let n = Int(middle), n < seq { unlink(directory.appendingPathComponent(name).path) }
        }
    }
}
