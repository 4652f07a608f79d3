import Foundation
import SurveyWire
import Synchronization

/// Evaluates targeting expressions (message triggers, onboarding conditions) the way Nimbus's messaging helper does:
/// a JSON context of attributes, the transforms Nimbus registers on mobile, the event store as of `now`, a boolean
/// result required. Parsed expressions are cached for the helper's lifetime, as the AS helper caches per expression.
public final class TargetingHelper: Sendable {
    /// Transform names Nimbus registers on mobile (`preferenceIsUserSet` is Gecko-only and absent).
    public static let transformNames: Set<String> = Set(EventQuery.allCases.map(\.rawValue)).union(["versionCompare", "bucketSample"])

    public let evaluator: JEXLEvaluator
    private let parsed = Mutex<[String: Result<JEXLExpression, JEXLError>]>([:])

    public init(context: [String: JSONValue], events: EventStore = EventStore(), now: Date) {
        var transforms = events.transforms(at: now)
        transforms["versionCompare"] = Sampling.versionCompareTransform
        transforms["bucketSample"] = Sampling.bucketSampleTransform
        evaluator = JEXLEvaluator(context: context, transforms: transforms)
    }

    /// The boolean value of `expression`; any parse or evaluation error is thrown (callers treat it as "not eligible").
    public func evaluate(_ expression: String) throws(JEXLError) -> Bool {
        try evaluator.evaluateBool(try parse(expression))
    }

    /// The value of `expression`, whatever its type (for `survey-cli messaging eval`).
    public func value(_ expression: String) throws(JEXLError) -> JSONValue {
        try evaluator.evaluate(try parse(expression))
    }

    func parse(_ expression: String) throws(JEXLError) -> JEXLExpression {
        let result = parsed.withLock { cache in
            if let cached = cache[expression] { return cached }
            let fresh: Result<JEXLExpression, JEXLError>
            do throws(JEXLError) { fresh = .success(try JEXLParser.parse(expression)) } catch { fresh = .failure(error) }
            cache[expression] = fresh
            return fresh
        }
        return try result.get()
    }

    /// Problems that make an expression unusable on the real engine, found without evaluating it: a parse error or an
    /// unknown transform. Nil when it is fine.
    public static func validate(_ expression: String) -> JEXLError? {
        do throws(JEXLError) {
            let tree = try JEXLParser.parse(expression)
            if let unknown = tree.transformNames.first(where: { !transformNames.contains($0) }) {
                return JEXLError(code: "unknown_transform", message: "`\(expression)` uses the transform `\(unknown)`, which Nimbus does not register on mobile")
            }
            return nil
        } catch {
            return error
        }
    }

    /// Warnings about an expression that parses: `&&` and `||` mixed without parentheses (two engines read it
    /// differently), and event ids not in `knownEvents` (a typo silently counts 0; bug B20).
    public static func lint(_ expression: String, knownEvents: Set<String>? = nil) -> [String] {
        guard let (tree, mixed) = try? JEXLParser.parseNoting(expression) else { return [] }
        var warnings: [String] = []
        if mixed {
            warnings.append("`\(expression)` mixes && and || without parentheses; jexl-rs reads `a || b && c` as `(a || b) && c`")
        }
        if let knownEvents {
            for query in EventQuery.allCases {
                for id in tree.literalSubjects(of: query.rawValue) where !knownEvents.contains(id) {
                    warnings.append("`\(expression)` queries the event `\(id)`, which the app never records")
                }
            }
        }
        return warnings
    }
}
