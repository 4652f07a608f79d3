import Foundation
import Testing
import Glibc
@testable import ClientSDK
import SurveyWire

@Suite struct SurveyClientStorageTests {
    func configuration(_ root: URL) -> SurveyClientConfiguration {
        SurveyClientConfiguration(serverURL: "http://127.0.0.1:1", relayURL: "http://127.0.0.1:1", storageDirectory: root,
                                  patientID: "p1", temporaryPassword: "pw")
    }

    @Test func aSecondClientOnTheSameDirectoryRefusesUntilTheFirstCloses() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-lock-\(UUID().uuidString.prefix(8))")
        let first = try SurveyClient(configuration: configuration(root))
        do {
            _ = try SurveyClient(configuration: configuration(root))
            Issue.record("a second client started on a locked directory")
        } catch {
            #expect(error.code == "storage_locked")
        }
        await first.close()
        let second = try SurveyClient(configuration: configuration(root))
        await second.close()
    }

    @Test func aCorruptStateFileIsQuarantinedAndTheClientStartsFresh() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-corrupt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("{\"registered\": tru".utf8).write(to: root.appendingPathComponent("state.json"))
        let client = try SurveyClient(configuration: configuration(root))
        #expect(await client.pendingSurveys().isEmpty)
        let quarantine = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("quarantine").path)
        #expect(quarantine.contains { $0.hasPrefix("state.json.") && !$0.hasSuffix(".reason") })
        await client.close()
    }
}
