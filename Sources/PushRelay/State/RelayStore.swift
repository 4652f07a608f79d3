import Foundation
import GRDB
import SurveyWire

/// `--store PATH`: the relay's devices, their pending messages and retired tokens in SQLite, written through on every
/// change before the change is answered, so a relay restart (or a kill) loses no accepted push. The trace and the
/// fault settings are not kept.
final class RelayStore: Sendable {
    private let queue: DatabaseQueue

    /// Opens (creating) the store file; parent directories are created.
    init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        var configuration = Configuration()
        // WAL with synchronous NORMAL: a committed change survives the process dying (not a power cut).
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE device (token TEXT PRIMARY KEY, state BLOB NOT NULL);
                CREATE TABLE retired (token TEXT PRIMARY KEY, at INTEGER NOT NULL);
                """)
        }
        try migrator.migrate(queue)
    }

    /// Everything stored: devices (disconnected) and retired tokens. A row that cannot be read is skipped and named.
    func load() throws -> (devices: [String: DeviceState], retired: [String: Int64], unreadable: [String]) {
        try queue.read { db in
            var devices: [String: DeviceState] = [:]
            var unreadable: [String] = []
            for row in try Row.fetchAll(db, sql: "SELECT token, state FROM device") {
                let token: String = row["token"]
                let data: Data = row["state"]
                if var device = try? JSONDecoder().decode(DeviceState.self, from: data) {
                    device.disconnect()
                    devices[token] = device
                } else {
                    unreadable.append(token)
                }
            }
            var retired: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT token, at FROM retired") { retired[row["token"]] = row["at"] }
            return (devices, retired, unreadable)
        }
    }

    /// Writes one device's whole state.
    func save(_ device: DeviceState) throws {
        let data = try JSONEncoder().encode(device)
        try queue.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO device (token, state) VALUES (?, ?)", arguments: [device.token, data])
        }
    }

    /// Writes several devices in one transaction.
    func save(_ devices: [DeviceState]) throws {
        let rows = try devices.map { ($0.token, try JSONEncoder().encode($0)) }
        try queue.write { db in
            for (token, data) in rows {
                try db.execute(sql: "INSERT OR REPLACE INTO device (token, state) VALUES (?, ?)", arguments: [token, data])
            }
        }
    }

    /// A token was rotated away or uninstalled.
    func retire(_ token: String, at: Int64) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM device WHERE token = ?", arguments: [token])
            try db.execute(sql: "INSERT OR REPLACE INTO retired (token, at) VALUES (?, ?)", arguments: [token, at])
        }
    }

    func wipe() throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM device")
            try db.execute(sql: "DELETE FROM retired")
        }
    }
}
