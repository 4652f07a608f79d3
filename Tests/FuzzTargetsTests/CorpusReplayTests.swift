import Foundation
import FuzzTargets
import Testing

/// Every input in `Fuzz/corpus/<target>/` (the seeds, and each crash the fuzzer ever found, kept as a regression test)
/// runs through its target: none may trap.
@Suite struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus")

    @Test(arguments: FuzzTarget.allCases)
    func corpusRunsClean(_ target: FuzzTarget) throws {
        let directory = Self.corpus.appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files.count >= 3, "the \(target.rawValue) corpus has seeds")
        for file in files {
            target.run(Array(try Data(contentsOf: directory.appendingPathComponent(file))))
        }
    }

    /// Inputs built to be worst cases (the defects of issue 13 and their relatives), at the size limits.
    @Test func worstCasesAtTheLimitsRunInLinearTime() {
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            FuzzTarget.form.run(Array(String(repeating: "&=", count: 500_000).utf8))
            FuzzTarget.form.run(Array((0..<999).map { "k\($0)=v" }.joined(separator: "&").utf8))
            FuzzTarget.multipart.run([70] + Array(String(repeating: "x", count: 70).utf8)
                                     + Array(String(repeating: "\r\n--" + String(repeating: "x", count: 69) + "y", count: 100_000).utf8))
            FuzzTarget.jexl.run(Array(String(repeating: "(", count: 100_000).utf8))
            FuzzTarget.jexl.run(Array((Array(repeating: "1", count: 1_000).joined(separator: "+")).utf8))
            FuzzTarget.ping.run(Array("[0, \(Int32.max)]".utf8))
            FuzzTarget.schedule.run(Array(#"[{"type":"relative","days_after":3650,"hour":23,"minute":59,"anchor":{"intervention":"a"}}]"#.utf8))
        }
        // Generous for a debug build on a busy machine; quadratic parsing of these took minutes.
        #expect(elapsed < .seconds(20), "worst cases took \(elapsed)")
    }
}
