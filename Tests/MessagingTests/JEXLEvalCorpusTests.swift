import Foundation
import Testing
@testable import Messaging
import SurveyWire

/// Every expression of `docs/conformance/jexl-eval-0.4.0.json` gives the value (or the error) jexl-eval 0.4.0 gives it,
/// the version Nimbus pins and Firefox evaluates message targeting with (issue 50: a conditional whose test erred
/// failed the whole expression here, where Firefox takes the else branch; `NULL`, `Null` and `1.` were accepted).
@Suite struct JEXLEvalCorpusTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/conformance/jexl-eval-0.4.0.json")

    struct Row: Sendable, CustomTestStringConvertible {
        var expression: String
        var value: JSONValue?
        var error: String?
        var testDescription: String { expression }
    }

    static let corpus: (context: [String: JSONValue], rows: [Row]) = {
        guard let data = try? Data(contentsOf: file), let document = try? JSONParser.parse(Array(data)),
              let rows = document["rows"]?.arrayValue else { return ([:], []) }
        return (document["context"]?.objectValue ?? [:], rows.map { row in
            Row(expression: row["expression"]?.stringValue ?? "", value: row.objectValue?["value"], error: row["error"]?.stringValue)
        })
    }()

    @Test func theCorpusIsRead() {
        #expect(Self.corpus.rows.count >= 40, "\(Self.file.path)")
    }

    @Test(arguments: corpus.rows) func givesJexlEvalsValue(_ row: Row) {
        let helper = TargetingHelper(context: Self.corpus.context, now: Date(timeIntervalSince1970: 1_790_000_000))
        do throws(JEXLError) {
            let value = try helper.value(row.expression)
            #expect(row.error == nil, "\(row.expression) gave \(value), jexl-eval: error \(row.error ?? "")")
            if let expected = row.value { #expect(value == expected, "\(row.expression)") }
        } catch {
            #expect(row.error == error.code, "\(row.expression) failed with \(error.code), jexl-eval: \(row.value.map { "\($0)" } ?? "")")
        }
    }
}
