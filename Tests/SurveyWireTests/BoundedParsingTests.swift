import Foundation
import SurveyWire
import Testing

/// The parsers of nested and numeric input that a single request reached with a value that trapped a process
/// (issue 49): each refuses it now, and each is a fuzz target (`FuzzTarget.target`, `.condition`, `.jwt`).
@Suite struct BoundedParsingTests {
    @Test func anFCMConditionIsBoundedInDepthForNotAsForParentheses() throws {
        // 50,000 `!` overflowed the relay's stack: each `!` recursed and only parentheses were counted.
        #expect(throws: TopicCondition.Invalid.self) { try TopicCondition(String(repeating: "!", count: 50_000) + "'a' in topics") }
        #expect(throws: TopicCondition.Invalid.self) { try TopicCondition(String(repeating: "(", count: 50_000)) }
        #expect(throws: TopicCondition.Invalid.self) {
            try TopicCondition(String(repeating: "!(", count: 9) + "'a' in topics" + String(repeating: ")", count: 9))
        }
        let deep = String(repeating: "!", count: TopicCondition.maxDepth) + "'a' in topics"
        #expect(try TopicCondition(deep).matches(["a"]) == true)
        #expect(throws: TopicCondition.Invalid.self) { try TopicCondition("!" + deep) }
    }

    func token(_ claims: String) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
        }
        return part(#"{"alg":"ES256","kid":"k"}"#) + "." + part(claims) + ".c2ln"
    }

    @Test func jwtTimesOutsideTheirRangeAreNotTimes() throws {
        #expect(try JWT(token(#"{"iat":1700000000.9}"#)).seconds("iat") == 1_700_000_000)
        for value in ["1e300", "-1e300", "9223372036854775807", "1e19", "\"1700000000\"", "null", "[1]"] {
            #expect(try JWT(token(#"{"iat":\#(value)}"#)).seconds("iat") == nil, "\(value)")
        }
        #expect(try JWT(token(#"{}"#)).seconds("exp") == nil)
    }

    @Test func queryValuesAreRangedAndNeverTrap() {
        let wait = Duration.zero...Duration.seconds(60)
        #expect(QueryValue.duration("1e308", in: wait) == nil)
        #expect(QueryValue.duration("99999999999999999999", in: wait) == nil)
        #expect(QueryValue.duration("1e20ms", in: wait) == nil)
        #expect(QueryValue.duration("-1s", in: wait) == nil)
        #expect(QueryValue.duration("500ms", in: wait) == .milliseconds(500))
        #expect(QueryValue.integer("9223372036854775807", in: 0...(1 << 53)) == nil)
        #expect(QueryValue.integer("99999999999999999999999", in: 0...10) == nil)
        #expect(QueryValue.integer("7", in: 0...10) == 7)
    }

    /// Read as the servers read a query (Hummingbird's `URI.queryParameters`): values percent-decoded unless an escape
    /// is invalid, `+` kept, names as written.
    @Test func queryPairsAreSplitAndDecoded() {
        let pairs = QueryValue.pairs(ofTarget: "/x?a=1&b=two+words&c=%2F%zz&&d&e=&f%5F=%2F")
        #expect(pairs.map(\.name) == ["a", "b", "c", "d", "e", "f%5F"])
        #expect(pairs.map(\.value) == ["1", "two+words", "%2F%zz", "", "", "/"])
        #expect(QueryValue.pairs(ofTarget: "/x").isEmpty)
    }

    @Test func aCanonicalTargetIsAFixedPoint() throws {
        for target in ["//__control//stats/", "/metrics/", "///a///b?x=//", "/"] {
            guard case .success(let once) = RequestPath.canonical(target) else { Issue.record("\(target) refused"); continue }
            #expect(RequestPath.canonical(once) == .success(once), "\(target)")
        }
    }
}
