import Foundation
import Testing
@testable import ClientSDK

/// `SurveyClientError.Code` names every code the SDK writes: each `code: "…"` literal under `Sources/ClientSDK` is one
/// of `Code.allCases`, so a new code cannot ship unnamed (apps compare against the static members).
@Suite struct ErrorCodeListTests {
    @Test func everyCodeTheSDKWritesIsNamed() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/ClientSDK")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let literal = /code: "([a-z_]+)"/
        var written: Set<String> = []
        for case let file as URL in files where file.pathExtension == "swift" {
            for match in try String(contentsOf: file, encoding: .utf8).matches(of: literal) { written.insert(String(match.1)) }
        }
        #expect(written.count >= 15, "the scan found the SDK's codes")
        let named = Set(SurveyClientError.Code.allCases.map(\.rawValue))
        #expect(written.subtracting(named).sorted() == [])
        #expect(named.count == SurveyClientError.Code.allCases.count, "allCases lists each code once")
    }
}
