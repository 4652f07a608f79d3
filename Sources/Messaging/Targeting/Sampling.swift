import SurveyCrypto
import SurveyWire

/// Nimbus's deterministic sampling (application-services `sampling.rs`, after Firefox's Sampling.jsm): the input's
/// compact JSON is hashed with SHA-256, its first 48 bits place it in `[0, 2^48)`, and ranges of that space are buckets.
public enum Sampling {
    static let hashBits = 48

    /// serde_json's compact form: object keys sorted, no spaces, integral numbers without a fraction.
    public static func canonicalJSON(_ value: JSONValue) -> String { value.compactText }

    /// The first 6 bytes of SHA-256 of the input's compact JSON, as a number.
    public static func truncatedHash(_ input: JSONValue) -> UInt64 {
        SHA256.hash(canonicalJSON(input)).prefix(6).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// `fraction` of the hash space, as `fraction_to_key` computes it (floor of fraction × (2^48 − 1)).
    static func key(_ fraction: Double) -> UInt64 {
        UInt64((fraction * Double((UInt64(1) << hashBits) - 1)).rounded(.down))
    }

    static func inBucket(_ hash: UInt64, min: UInt64, max: UInt64, total: UInt64) -> Bool {
        key(Double(min) / Double(total)) <= hash && hash < key(Double(max) / Double(total))
    }

    /// True when `input` falls in buckets `start ..< start + count` of `total` (the range wraps around).
    public static func bucketSample(_ input: JSONValue, start: UInt64, count: UInt64, total: UInt64) -> Bool {
        guard total > 0 else { return false }
        let hash = truncatedHash(input)
        let wrapped = start % total
        let end = wrapped + count
        if end > total {
            return inBucket(hash, min: 0, max: end % total, total: total) || inBucket(hash, min: wrapped, max: total, total: total)
        }
        return inBucket(hash, min: wrapped, max: end, total: total)
    }

    /// The index of the ratio `input` falls in, each ratio getting its share of the hash space (`ratio_sample`);
    /// nil for an empty list or ratios summing to 0.
    public static func ratioSample(_ input: JSONValue, ratios: [UInt64]) -> Int? {
        let total = ratios.reduce(0, +)
        guard !ratios.isEmpty, total > 0 else { return nil }
        let hash = truncatedHash(input)
        var point: UInt64 = 0
        for i in 0..<(ratios.count - 1) {
            point += ratios[i]
            if hash <= key(Double(point) / Double(total)) { return i }
        }
        return ratios.count - 1
    }

    /// Nimbus's branch choice for an experiment: `ratio_sample("experiment-manager-<client id>-<slug>-branch", ratios)`.
    public static func branchIndex(clientID: String, slug: String, ratios: [UInt64]) -> Int? {
        ratioSample(.string("experiment-manager-\(clientID)-\(slug)-branch"), ratios: ratios)
    }

    /// The `bucketSample(start, count, total)` transform: `input|bucketSample(start, count, total)`.
    public static let bucketSampleTransform: JEXLTransform = { (args: [JSONValue]) throws -> JSONValue in
        guard args.count == 4 else {
            throw JEXLError(code: "transform_parameter_error", message: "bucketSample requires 3 parameters (start, count, total), got \(args.count - 1)")
        }
        var numbers: [UInt64] = []
        for arg in args[1...] {
            guard case .number(let n) = arg, n >= 0, n.rounded() == n, n < 4_294_967_296 else {
                throw JEXLError(code: "transform_parameter_error", message: "bucketSample parameters must be whole numbers from 0 to 2^32-1")
            }
            numbers.append(UInt64(n))
        }
        guard numbers[2] > 0 else { throw JEXLError(code: "transform_parameter_error", message: "bucketSample's total must be positive") }
        return .bool(bucketSample(args[0], start: numbers[0], count: numbers[1], total: numbers[2]))
    }

    /// The `versionCompare(other)` transform: `'14.1'|versionCompare('14.!')` gives -1, 0 or 1.
    public static let versionCompareTransform: JEXLTransform = { (args: [JSONValue]) throws -> JSONValue in
        guard args.count == 2, case .string(let current) = args[0], case .string(let other) = args[1] else {
            throw JEXLError(code: "transform_parameter_error", message: "versionCompare compares two version strings: 'a'|versionCompare('b')")
        }
        return .number(Double(FirefoxVersion.compare(FirefoxVersion(current), FirefoxVersion(other))))
    }
}
