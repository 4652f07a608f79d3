import Foundation
import GRDB

/// Where the mock server keeps its data.
public enum StoreLocation: Sendable, Equatable {
    /// A SQLite file (WAL mode); parent directories are created.
    case file(String)
    /// An in-memory database, gone when the process exits.
    case memory

    /// `:memory:` or a path.
    public init(argument: String) {
        self = argument == ":memory:" ? .memory : .file(argument)
    }

    var kind: String {
        switch self {
        case .file: "sqlite"
        case .memory: "sqlite-memory"
        }
    }
}

/// The server's SQLite store. Every method is one transaction, so a crash leaves either all or none
/// of a request's changes.
final class Store: Sendable {
    let writer: any DatabaseWriter
    let location: StoreLocation

    init(_ location: StoreLocation) throws {
        self.location = location
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        switch location {
        case .memory:
            writer = try DatabaseQueue(configuration: config)
        case .file(let path):
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            writer = try DatabasePool(path: path, configuration: config)
        }
        try Schema.migrator().migrate(writer)
    }

    func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await writer.read(body)
    }

    func write<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        try await writer.write(body)
    }

    /// Deletes every row of every table.
    func wipe() async throws {
        try await writer.write { db in
            for table in ["notification_report", "heartbeat", "telemetry", "upload", "submission", "push", "occurrence",
                          "intervention", "survey", "participant", "study_intervention", "study"] {
                try db.execute(sql: "DELETE FROM \(table)")
            }
        }
    }
}

/// Identifier helpers.
enum Identifiers {
    /// 24 lowercase hex characters, like Beiwe's object ids.
    static func objectID() -> String {
        (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// Beiwe's easy alphanumerics: lowercase letters and 1-9 (no 0), `count` long.
    static func easyAlphanumeric(_ count: Int = 8) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }

    /// 32 random alphanumerics (push nonces).
    static func nonce() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<32).map { _ in alphabet.randomElement()! })
    }
}
