import Foundation
import SurveyWire

#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// The client's files. Every write goes to a temporary file that is flushed to disk (`fsync`) and renamed into place,
/// and the directory is flushed too, so a crash or power cut leaves the old or the new version, never a torn one.
/// One client at a time: the directory is locked (`flock` on `lock`) while a client uses it. A file that cannot be
/// read is moved to `quarantine/` with a `.reason` note beside it and logged; the client carries on without it.
///
/// Layout: `state.json`, `surveys/<survey id>.json`, `outbox/uploads/<file name>.json`, `outbox/pings/<document id>.json`,
/// `outbox/deletion_request/<document id>.json`, `telemetry/` (the event log),
/// `quarantine/`, `lock`.
struct ClientStore: Sendable {
    let root: URL
    let logger: Logger
    private let lock: DirectoryLock

    var stateURL: URL { root.appendingPathComponent("state.json") }
    var surveysURL: URL { root.appendingPathComponent("surveys", isDirectory: true) }
    var uploadsURL: URL { root.appendingPathComponent("outbox/uploads", isDirectory: true) }
    var pingsURL: URL { root.appendingPathComponent("outbox/pings", isDirectory: true) }
    /// Deletion-request pings: kept apart, sent first, never removed by quotas or age.
    var deletionRequestsURL: URL { root.appendingPathComponent("outbox/deletion_request", isDirectory: true) }
    var quarantineURL: URL { root.appendingPathComponent("quarantine", isDirectory: true) }

    /// Creates the layout and takes the directory's lock; `storage_locked` when another client holds it.
    init(root: URL, logger: Logger = Logger(label: "survey-sdk")) throws(SurveyClientError) {
        self.root = root
        self.logger = logger
        do {
            for dir in [root, root.appendingPathComponent("surveys"), root.appendingPathComponent("outbox/uploads"),
                        root.appendingPathComponent("outbox/pings"), root.appendingPathComponent("outbox/deletion_request"),
                        root.appendingPathComponent("quarantine")] {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            // The directory holds the participant's credentials and answers: the owner's alone, whoever created it.
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: root.path)
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot create \(root.path): \(error)")
        }
        lock = try DirectoryLock(root.appendingPathComponent("lock"))
    }

    /// Lets another client use the directory. Every write after this throws `closed`: the directory belongs to whoever
    /// takes the lock next.
    func releaseLock() { lock.release() }

    /// True once the lock is released.
    var isReleased: Bool { lock.isReleased }

    /// Writes `value` as JSON: temporary file, fsync, rename, fsync of the directory.
    func write(_ value: some Encodable, to url: URL) throws(SurveyClientError) {
        guard !lock.isReleased else { throw SurveyClientError.closed }
        let data: Data
        do {
            data = try WireJSON.encode(value)
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot encode \(url.lastPathComponent): \(error)")
        }
        try Self.durableWrite(data, to: url)
    }

    /// The durable replace behind `write`.
    static func durableWrite(_ data: Data, to url: URL) throws(SurveyClientError) {
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/." + url.lastPathComponent + ".tmp-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        func fail(_ what: String) -> SurveyClientError {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return SurveyClientError(code: "storage", message: "cannot \(what) \(url.path): \(reason)")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw fail("create a temporary file for") }
        let written = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
        guard written, fsync(fd) == 0 else {
            close(fd)
            throw fail("write")
        }
        close(fd)
        guard rename(temporary, url.path) == 0 else { throw fail("rename into") }
        let dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }

    /// The decoded file, nil when absent. A file that cannot be read or decoded is quarantined (and nil returned).
    func read<T: Decodable>(_ type: T.Type, from url: URL) -> T? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try WireJSON.decode(type, from: Data(contentsOf: url))
        } catch {
            quarantine(url, reason: "\(error)")
            return nil
        }
    }

    func remove(_ url: URL) {
        guard !lock.isReleased else { return }
        try? FileManager.default.removeItem(at: url)
    }

    /// Every readable JSON file of a directory, oldest name first; unreadable ones are quarantined and skipped.
    func list<T: Decodable>(_ type: T.Type, in directory: URL) -> [(URL, T)] {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? []
        return files.filter { Self.isEntry($0.lastPathComponent) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
            .compactMap { url in read(type, from: url).map { (url, $0) } }
    }

    /// How many JSON files a directory holds, without reading them (an unreadable one counts until something lists the
    /// directory and quarantines it).
    func count(in directory: URL) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.count(where: Self.isEntry)
    }

    /// A stored JSON file, not a temporary one (`durableWrite`'s start with a dot).
    static func isEntry(_ name: String) -> Bool { name.hasSuffix(".json") && !name.hasPrefix(".") }

    /// Moves a file that cannot be used to `quarantine/`, with a `.reason` note, and logs it. Not once the lock is
    /// released: the directory may be another client's then (a newer SDK's file this one cannot read is not damaged).
    func quarantine(_ url: URL, reason: String) {
        guard !lock.isReleased else { return }
        let relative = url.path.hasPrefix(root.path) ? String(url.path.dropFirst(root.path.count + 1)) : url.lastPathComponent
        let name = Self.safe(relative.replacingOccurrences(of: "/", with: "_")) + "." + String(Int(Date().timeIntervalSince1970 * 1000))
        let target = quarantineURL.appendingPathComponent(name)
        do {
            try FileManager.default.moveItem(at: url, to: target)
            try? Self.durableWrite(Data("\(relative): \(reason)\n".utf8), to: quarantineURL.appendingPathComponent(name + ".reason"))
            logger.warning("quarantined an unreadable file", metadata: ["file": "\(relative)", "moved_to": "\(target.path)", "reason": "\(reason)"])
        } catch {
            // Could not move it: delete it rather than trip over it on every start.
            try? FileManager.default.removeItem(at: url)
            logger.error("deleted an unreadable file that could not be quarantined",
                         metadata: ["file": "\(relative)", "reason": "\(reason)", "error": "\(error)"])
        }
    }

    /// Files moved to quarantine so far (their `.reason` notes excluded).
    func quarantined() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: quarantineURL.path)) ?? []).filter { !$0.hasSuffix(".reason") }.sorted()
    }

    func surveyURL(_ id: String) -> URL { surveysURL.appendingPathComponent("\(Self.safe(id)).json") }
    func uploadURL(_ fileName: String) -> URL { uploadsURL.appendingPathComponent("\(Self.safe(fileName)).json") }
    func pingURL(_ documentID: String, in directory: URL? = nil) -> URL {
        (directory ?? pingsURL).appendingPathComponent("\(Self.safe(documentID)).json")
    }

    /// File-name-safe form of an id (ids come from the server).
    static func safe(_ id: String) -> String {
        String(id.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" })
    }
}

/// An encrypted answers file waiting to be uploaded.
struct PendingUpload: Codable, Sendable {
    var fileName: String
    var surveyID: String
    var body: String
    /// The occurrences these answers cover; occurrences that arrived meanwhile stay stored (nil: all of them).
    var scheduleUUIDs: [String]?
}

/// A ping waiting to be uploaded.
struct PendingPing: Codable, Sendable {
    var documentID: String
    var pingName: String
    var body: TelemetryPing
    /// When the ping was made (ms since 1970); nil in files older versions wrote (the file's time is used then).
    var createdMillis: Int64?
}

/// An exclusive `flock` on a directory's lock file, held until released or deinitialized (the kernel drops it when
/// the process dies, so a crashed client never leaves the directory locked).
final class DirectoryLock: Sendable {
    private let fd: Mutex<Int32>

    init(_ url: URL) throws(SurveyClientError) {
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SurveyClientError(code: "storage", message: "cannot open \(url.path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOf: url, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            close(descriptor)
            throw SurveyClientError(code: "storage_locked",
                                    message: "another SurveyClient is using \(url.deletingLastPathComponent().path)"
                                        + (holder.isEmpty ? "" : " (pid \(holder))") + "; one directory serves one client at a time")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        fd = Mutex(descriptor)
    }

    var isReleased: Bool { fd.withLock { $0 < 0 } }

    /// Unlocks, then closes. Closing alone is not enough: the lock belongs to the open file, and a child process forked
    /// elsewhere in this process (a `Process` launched by another thread) holds a copy of the descriptor until it execs,
    /// so the next client on the directory found it still locked (`storage_locked`, seen in CI once).
    func release() {
        fd.withLock { descriptor in
            guard descriptor >= 0 else { return }
            flock(descriptor, LOCK_UN)
            close(descriptor)
            descriptor = -1
        }
    }

    deinit { release() }
}
