import Foundation
import SurveyWire

/// The client's files. Every write goes to a temporary file and is renamed into place, so a crash leaves
/// the old or the new version, never a torn one.
///
/// Layout: `state.json`, `surveys/<survey id>.json`, `outbox/uploads/<file name>.json`, `outbox/pings/<document id>.json`.
struct ClientStore: Sendable {
    let root: URL

    var stateURL: URL { root.appendingPathComponent("state.json") }
    var surveysURL: URL { root.appendingPathComponent("surveys", isDirectory: true) }
    var uploadsURL: URL { root.appendingPathComponent("outbox/uploads", isDirectory: true) }
    var pingsURL: URL { root.appendingPathComponent("outbox/pings", isDirectory: true) }

    init(root: URL) throws(SurveyClientError) {
        self.root = root
        do {
            for dir in [root, root.appendingPathComponent("surveys"), root.appendingPathComponent("outbox/uploads"),
                        root.appendingPathComponent("outbox/pings")] {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            }
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot create \(root.path): \(error)")
        }
    }

    func write(_ value: some Encodable, to url: URL) throws(SurveyClientError) {
        do {
            try WireJSON.encode(value).write(to: url, options: .atomic)
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot write \(url.path): \(error)")
        }
    }

    func read<T: Decodable>(_ type: T.Type, from url: URL) throws(SurveyClientError) -> T? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try WireJSON.decode(type, from: Data(contentsOf: url))
        } catch {
            throw SurveyClientError(code: "storage", message: "cannot read \(url.path): \(error)")
        }
    }

    func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    func list<T: Decodable>(_ type: T.Type, in directory: URL) -> [(URL, T)] {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? []
        return files.filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }.compactMap { url in
            guard let data = try? Data(contentsOf: url), let value = try? WireJSON.decode(type, from: data) else { return nil }
            return (url, value)
        }
    }

    func surveyURL(_ id: String) -> URL { surveysURL.appendingPathComponent("\(Self.safe(id)).json") }
    func uploadURL(_ fileName: String) -> URL { uploadsURL.appendingPathComponent("\(Self.safe(fileName)).json") }
    func pingURL(_ documentID: String) -> URL { pingsURL.appendingPathComponent("\(Self.safe(documentID)).json") }

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
}

/// A ping waiting to be uploaded.
struct PendingPing: Codable, Sendable {
    var documentID: String
    var pingName: String
    var body: TelemetryPing
}
