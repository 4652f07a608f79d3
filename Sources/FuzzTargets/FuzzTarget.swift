import Foundation
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// The decoders that take bytes from the network, each as a function of arbitrary input that must return (never trap,
/// never take more than linear time), and whose round-trip properties are checked where they have one.
///
/// libFuzzer drives them (`scripts/fuzz`, the `decoder-fuzz` product built with `-sanitize=fuzzer`); the unit tests replay
/// the seed corpus and every crash ever found (`Fuzz/corpus/<target>/`) through the same functions.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `application/x-www-form-urlencoded` bodies of the mobile API.
    case form
    /// `multipart/form-data` bodies (the first byte picks the boundary's length, the next bytes are the boundary).
    case multipart
    /// Beiwe's encrypted file format, decrypted with a fixed key.
    case beiweFile = "beiwe-file"
    /// Telemetry pings: JSON, ranges, and the gap report over the sequence numbers.
    case ping
    /// Schedule entries (JSON), planned over a week for a fixed participant.
    case schedule
    /// JEXL targeting expressions: parsed and evaluated against a fixed context.
    case jexl
    /// gzip bodies (`Content-Encoding: gzip`).
    case gzip
    /// Whole request targets (path and query): made canonical, then every query value read as each listing reads its
    /// `wait`, `min_count`, `after`, `limit` and `status`.
    case target
    /// FCM topic conditions (nested `!`, `&&`, `||`, parentheses).
    case condition
    /// Compact JWTs (FCM assertions, APNs provider tokens): read, and their times taken.
    case jwt

    /// Runs one input. A violated property is a `preconditionFailure`: a crash, which is what the fuzzer reports.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .form: Self.form(bytes)
        case .multipart: Self.multipart(bytes)
        case .beiweFile: Self.beiweFile(bytes)
        case .ping: Self.ping(bytes)
        case .schedule: Self.schedule(bytes)
        case .jexl: Self.jexl(bytes)
        case .gzip: Self.gzip(bytes)
        case .target: Self.target(bytes)
        case .condition: Self.condition(bytes)
        case .jwt: Self.jwt(bytes)
        }
    }

    static func form(_ bytes: [UInt8]) {
        guard let form = try? FormBody(parsingBytes: bytes, maxFields: FormBody.defaultMaxFields) else { return }
        precondition(form.fields.count <= FormBody.defaultMaxFields)
        // Encoding and parsing again gives the same fields.
        let again = FormBody(parsing: form.encoded())
        precondition(again == form, "form round trip changed the fields")
        for (name, value) in form.fields { precondition(form[name] == value) }
    }

    static func multipart(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let length = Int(first % 80)
        guard bytes.count > length else { return }
        let boundary = String(decoding: bytes[1..<(1 + length)], as: UTF8.self)
        guard let parsed = try? MultipartForm(parsing: Array(bytes[(1 + length)...]), boundary: boundary) else { return }
        precondition(parsed.parts.count <= MultipartForm.maxParts)
        _ = parsed.asForm()
    }

    /// A key made once per process (2048-bit generation takes a moment).
    nonisolated(unsafe) static var key: RSAKey?

    static func beiweFile(_ bytes: [UInt8]) {
        // `key` is set once, by the first input, on the fuzzer's single thread; the tests replay on one task.
        let key: RSAKey
        if let existing = Self.key { key = existing } else {
            guard let made = try? RSAKey.generate() else { return }
            Self.key = made
            key = made
        }
        guard let decrypted = try? BeiweFile.decrypt(String(decoding: bytes, as: UTF8.self), privateKey: key) else { return }
        _ = try? SurveyAnswersCSV.parse(lines: decrypted.lines)
    }

    static func ping(_ bytes: [UInt8]) {
        if let ping = try? JSONDecoder().decode(TelemetryPing.self, from: Data(bytes)) {
            _ = try? ping.checkRanges()
        }
        // The gap report over any sequence numbers that passed ingestion.
        if let numbers = try? JSONDecoder().decode([Int].self, from: Data(bytes)) {
            let valid = numbers.filter { WireLimits.pingSeq.contains($0) }.sorted()
            let report = AdminWire.SeqGaps(clientID: "c", ping: "p", sortedSeqs: valid)
            precondition(report.missing.count <= AdminWire.SeqGaps.missingListLimit)
            precondition((report.missingCount ?? 0) >= 0 && report.missing.count <= (report.missingCount ?? 0))
        }
    }

    static func schedule(_ bytes: [UInt8]) {
        guard let schedules = try? JSONDecoder().decode([Schedule].self, from: Data(bytes)), schedules.count <= 50 else { return }
        for schedule in schedules { precondition((try? schedule.validate()) != nil, "a decoded schedule fails validation") }
        let start = Date(timeIntervalSince1970: 1_777_900_000)
        for zone in ["America/Chicago", "Pacific/Apia", "UTC"] {
            let participant = ParticipantContext(timeZone: TimeZone(identifier: zone)!, registeredAt: start,
                                                 interventions: ["a": LocalDate(year: 2026, month: 5, day: 1)!])
            let found = OccurrenceCalculator.occurrences(of: schedules, for: participant, after: start, through: start.addingTimeInterval(8 * 86_400))
            precondition(found.allSatisfy { $0.dueAt > start && $0.dueAt <= start.addingTimeInterval(8 * 86_400) })
            _ = OccurrenceCalculator.timings(of: schedules, for: participant, around: start)
        }
    }

    static func jexl(_ bytes: [UInt8]) {
        let source = String(decoding: bytes, as: UTF8.self)
        guard let expression = try? JEXLParser.parse(source) else { return }
        let evaluator = JEXLEvaluator(context: ["locale": "en-US", "version": 120, "list": [1, 2, 3], "nested": ["a": ["b": true]]],
                                      transforms: ["versionCompare": Sampling.versionCompareTransform, "bucketSample": Sampling.bucketSampleTransform])
        _ = try? evaluator.evaluate(expression)
    }

    static func gzip(_ bytes: [UInt8]) {
        guard let inflated = try? Gzip.decompress(bytes, limit: 1 << 20) else { return }
        precondition(inflated.count <= 1 << 20)
        precondition((try? Gzip.decompress(Gzip.compress(inflated), limit: 1 << 20)) == inflated, "gzip round trip changed the bytes")
    }

    static func target(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard case .success(let canonical) = RequestPath.canonical(text) else { return }
        // Canonical is a fixed point: making it canonical again changes nothing.
        guard case .success(let again) = RequestPath.canonical(canonical) else { preconditionFailure("a canonical target was refused") }
        precondition(again == canonical, "canonical(canonical(t)) != canonical(t)")
        let path = RequestPath.path(of: canonical)
        precondition(!path.contains("//"), "a canonical path has an empty segment")
        for (_, value) in QueryValue.pairs(ofTarget: canonical) {
            if let wait = QueryValue.duration(value, in: .zero...Duration.seconds(60)) {
                precondition(wait >= .zero && wait <= .seconds(60))
            }
            for range in [1...100_000, 0...(1 << 53), 1...1_000, 100...599] {
                if let number = QueryValue.integer(value, in: range) { precondition(range.contains(number)) }
            }
        }
    }

    static func condition(_ bytes: [UInt8]) {
        guard let condition = try? TopicCondition(String(decoding: bytes, as: UTF8.self)) else { return }
        // A condition taken names at most five topics, so evaluating it is cheap whatever it looked like.
        _ = condition.matches(["a", "b", "news"])
    }

    static func jwt(_ bytes: [UInt8]) {
        guard let token = try? JWT(String(decoding: bytes, as: UTF8.self)) else { return }
        for claim in ["iat", "exp", "nbf"] {
            if let seconds = token.seconds(claim) { precondition(abs(seconds) <= JWT.maxSeconds) }
        }
    }
}
