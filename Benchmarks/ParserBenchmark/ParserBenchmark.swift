import Foundation
import FuzzTargets
import Messaging
import Scheduling
import SurveyWire
import Transport

/// Times each network-facing parser on worst-case input at its size limit and at half of it. A linear parser takes
/// about twice as long on the full input (ratio ≈ 2); a quadratic one about four times. Run in release:
///
///     swift build -c release --product parser-benchmark && .build/release/parser-benchmark
@main
struct ParserBenchmark {
    struct Case {
        var name: String
        var limit: String
        /// The input at a fraction of the limit (0.5 or 1).
        var input: (Double) -> [UInt8]
        var run: ([UInt8]) -> Void
    }

    static func main() {
        let cases: [Case] = [
            Case(name: "form, empty fields", limit: "1 MiB body (refused past 1,000 fields)",
                 input: { f in Array(String(repeating: "&=", count: Int(f * 524_288)).utf8) },
                 run: { _ = try? FormBody(parsingBytes: $0, maxFields: FormBody.defaultMaxFields) }),
            Case(name: "form, distinct fields", limit: "1 MiB body, no field limit",
                 input: { f in Array((0..<Int(f * 80_000)).map { "field\($0)=v" }.joined(separator: "&").utf8) },
                 run: { _ = FormBody(parsingBytes: $0) }),
            Case(name: "multipart, near-miss boundaries", limit: "8 MiB body, 70-byte boundary",
                 input: { f in
                     // Each near miss matches the delimiter `\r\n--` + boundary up to its last byte.
                     let miss = "\r\n--" + String(repeating: "x", count: 69) + "y"
                     return Array(("--" + String(repeating: "x", count: 70) + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
                                   + String(repeating: miss, count: Int(f * 8_388_608) / 74)).utf8)
                 },
                 run: { _ = try? MultipartForm(parsing: $0, boundary: String(repeating: "x", count: 70)) }),
            Case(name: "JSON, nested arrays", limit: "1 MiB (Foundation refuses past 512 levels)",
                 input: { f in Array((String(repeating: "[", count: Int(f * 524_288)) + String(repeating: "]", count: Int(f * 524_288))).utf8) },
                 run: { _ = try? JSONDecoder().decode(JSONValue.self, from: Data($0)) }),
            Case(name: "gzip, 1 MiB of zeros", limit: "1 MiB inflated",
                 input: { f in Gzip.compress([UInt8](repeating: 0, count: Int(f * 1_048_576))) },
                 run: { _ = try? Gzip.decompress($0, limit: 1 << 20) }),
            Case(name: "JEXL, a + chain", limit: "2,000 tokens",
                 input: { f in Array(Array(repeating: "locale", count: Int(f * 1000)).joined(separator: "+").utf8) },
                 run: { FuzzTarget.jexl.run($0) }),
            Case(name: "schedules, weekly entries planned over 8 days", limit: "1,000 entries",
                 input: { f in
                     Array(("[" + (0..<Int(f * 1000)).map { #"{"type":"weekly","day_of_week":\#($0 % 7),"hour":\#($0 % 24),"minute":\#($0 % 60)}"# }
                         .joined(separator: ",") + "]").utf8)
                 },
                 run: { bytes in
                     guard let schedules = try? JSONDecoder().decode([Schedule].self, from: Data(bytes)) else { return }
                     let start = Date(timeIntervalSince1970: 1_777_900_000)
                     let who = ParticipantContext(timeZone: TimeZone(identifier: "America/Chicago")!, registeredAt: start)
                     _ = OccurrenceCalculator.occurrences(of: schedules, for: who, after: start, through: start.addingTimeInterval(8 * 86_400))
                 }),
        ]
        print("parser                                       limit                                        half      full      ratio")
        for c in cases {
            let half = time(c.run, c.input(0.5))
            let full = time(c.run, c.input(1))
            print(c.name.padding(toLength: 44, withPad: " ", startingAt: 0) + " " + c.limit.padding(toLength: 44, withPad: " ", startingAt: 0)
                  + String(format: " %7.1f ms %7.1f ms  %5.2f", half * 1000, full * 1000, full / max(half, 1e-9)))
        }
    }

    /// The best of five runs, in seconds.
    static func time(_ run: ([UInt8]) -> Void, _ input: [UInt8]) -> Double {
        var best = Double.infinity
        for _ in 0..<5 {
            let started = DispatchTime.now().uptimeNanoseconds
            run(input)
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        }
        return best
    }
}
