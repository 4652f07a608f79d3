import Foundation
import Logging
import ServerSupport
import Testing
@testable import DeviceHost
@testable import MockServer
@testable import PushRelay

/// The OpenAPI documents in `docs/openapi/` list exactly the routes the routers serve (none missing, none extra), and
/// the servers serve those same documents.
@Suite struct OpenAPIRouteTests {
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi")

    /// `METHOD /path` for every operation of a document.
    static func operations(_ file: String) throws -> Set<String> {
        let data = try Data(contentsOf: docs.appendingPathComponent(file))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let paths = try #require(object["paths"] as? [String: [String: Any]])
        var result: Set<String> = []
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        for (path, item) in paths {
            for key in item.keys where methods.contains(key) { result.insert("\(key.uppercased()) \(path)") }
        }
        return result
    }

    static func served(_ table: RouteTable) -> Set<String> {
        Set(table.routes.map { "\($0.method) \($0.path)" })
    }

    @Test func theMockServerDocumentListsEveryRouteAndNoOther() async throws {
        let server = try await MockServer(configuration: MockServerConfiguration(), logger: Logger(label: "test"))
        let router = server.makeRouter()
        let served = Self.served(RouteTable(router))
        let documented = try Self.operations("mock-server.json")
        #expect(served.subtracting(documented).sorted() == [], "served but not documented")
        #expect(documented.subtracting(served).sorted() == [], "documented but not served")
    }

    @Test func theDevicesDocumentListsEveryRouteAndNoOther() throws {
        let fleet = DeviceFleet(serverURL: "http://127.0.0.1:1", relayURL: nil, dataDirectory: URL(fileURLWithPath: "/tmp"))
        let served = Self.served(RouteTable(DeviceRoutes(fleet: fleet).makeRouter(logger: Logger(label: "test"), guard: nil)))
        let documented = try Self.operations("survey-devices.json")
        #expect(served.subtracting(documented).sorted() == [], "served but not documented")
        #expect(documented.subtracting(served).sorted() == [], "documented but not served")
    }

    @Test func theRelayDocumentListsEveryRouteAndNoOther() throws {
        let relay = try PushRelayServer()
        let served = Self.served(RouteTable(RouteTable(relay.makeRouter()).routes + PushRelayServer.connectionRoutes))
        let documented = try Self.operations("push-relay.json")
        #expect(served.subtracting(documented).sorted() == [], "served but not documented")
        #expect(documented.subtracting(served).sorted() == [], "documented but not served")
    }
}

/// The documents the servers serve are the ones in `docs/openapi/`, byte for byte.
@Suite struct ServedDocumentTests {
    @Test func theServersServeTheRepositorysDocuments() throws {
        let mock = try Data(contentsOf: OpenAPIRouteTests.docs.appendingPathComponent("mock-server.json"))
        let relay = try Data(contentsOf: OpenAPIRouteTests.docs.appendingPathComponent("push-relay.json"))
        #expect(Data(MockServer.openAPIDocument) == mock)
        #expect(Data(PushRelayServer.openAPIDocument) == relay)
        let devices = try Data(contentsOf: OpenAPIRouteTests.docs.appendingPathComponent("survey-devices.json"))
        #expect(Data(DeviceHost.PackageResources.openapi_json) == devices)
    }
}

/// The document's list of Beiwe device settings (what `device_settings` may override) is the server's.
@Suite struct DocumentedFieldTests {
    @Test func deviceSettingsListTheServersKeys() throws {
        let data = try Data(contentsOf: OpenAPIRouteTests.docs.appendingPathComponent("mock-server.json"))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let schemas = try #require((root["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let study = try #require((schemas["CreateStudy"] as? [String: Any])?["properties"] as? [String: Any])
        // Optional request fields are documented as `anyOf: [schema, null]`.
        let field = try #require(study["device_settings"] as? [String: Any])
        let schema = (field["anyOf"] as? [[String: Any]])?.first ?? field
        let settings = try #require(schema["properties"] as? [String: Any])
        #expect(Set(settings.keys) == Set(DeviceSettings.defaults.keys))
    }
}
