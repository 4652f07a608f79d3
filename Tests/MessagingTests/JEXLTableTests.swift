import Foundation
import Testing
@testable import Messaging
import SurveyWire

/// The evaluator against a table of expressions with their expected value or error code (jexl-rs 0.4 semantics,
/// reference §2.3). Each row is one case.
@Suite struct JEXLTableTests {
    enum Expect: Sendable, CustomStringConvertible {
        case value(JSONValue)
        case error(String)
        var description: String {
            switch self {
            case .value(let v): "value \(v)"
            case .error(let code): "error \(code)"
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var expression: String
        var expect: Expect
        var testDescription: String { "\(expression) → \(expect)" }
    }

    static let context: [String: JSONValue] = [
        "locale": "en-US", "os": "iOS", "os_version": "17.2", "app_version": "128.0", "language": "en", "region": "US",
        "days_since_install": 3, "days_since_update": 1, "is_default_browser": false, "is_fxa_signed_in": true,
        "number_of_app_launches": 12, "empty": "", "zero": 0, "nothing": .null,
        "list": [1, 2, 3], "names": ["a", "b"], "nested": ["a": ["b": ["c": 42]]], "obj": ["k": "v", "n": 2],
        "people": [["name": "ann", "age": 30], ["name": "bob", "age": 20], ["name": "cy", "age": 40]],
        "client_id": "299eed1e-be6d-457d-9e53-da7b1a03f10d",
    ]

    static func c(_ expression: String, _ value: JSONValue) -> Case { Case(expression: expression, expect: .value(value)) }
    static func e(_ expression: String, _ code: String) -> Case { Case(expression: expression, expect: .error(code)) }

    static let cases: [Case] = [
        // Literals.
        c("1", 1), c("1.5", 1.5), c(".5", 0.5), e("2.", "parse_error"), c("'single'", "single"), c("\"double\"", "double"),
        c("'it\\'s'", "it's"), c("\"say \\\"hi\\\"\"", "say \"hi\""), c("true", true), c("false", false),
        c("null", .null), e("Null", "undefined_identifier"), e("NULL", "undefined_identifier"), c("[]", []), c("[1, 'a', true]", [1, "a", true]),
        c("[1, 2,]", [1, 2]), c("{}", [:]), c("{ }", [:]), c("{a: 1, 'b c': 2}", ["a": 1, "b c": 2]),
        c("{\"x\": [1]}", ["x": [1]]), c("  ( 1 )  ", 1), c("\t2\n+\n3", 5),
        // Identifiers and access.
        c("locale", "en-US"), c("nested.a.b.c", 42), c("nested['a'].b['c']", 42), c("nested.missing", .null),
        c("nested.a.missing.deeper", .null), c("list[0]", 1), c("list[2]", 3), c("list[3]", .null), c("list[1.7]", 2),
        c("list[0 - 1]", 1), c("obj['k']", "v"), c("obj[0]", .null), c("locale.length", .null), c("locale[0]", .null),
        c("{a: 1}.a", 1), c("[10, 20][1]", 20), c("obj['k' + '']", "v"), c("names[list[0]]", "b"),
        e("unknown_attribute", "undefined_identifier"), e("unknown.x", "undefined_identifier"),
        e("list[true]", "invalid_index_type"), e("list[null]", "invalid_index_type"), e("obj[[0]]", "invalid_index_type"),
        // Filters.
        c("people[.age > 25]", [["name": "ann", "age": 30], ["name": "cy", "age": 40]]),
        c("people[.name == 'bob'].age", .null), c("people[.name == 'bob'][0].age", 20), c("people[.age > 100]", []),
        c("people[.missing == null]", .array(context["people"]!.arrayValue!)), e("obj[.k == 'v']", "invalid_filter"),
        c("people[.name > 1]", []), c("people[.age > 'x'] == []", true),
        // Arithmetic.
        c("1 + 2", 3), c("5 - 7", -2), c("2 * 3", 6), c("7 / 2", 3.5), c("7 // 2", 3), c("7 % 4", 3), c("2 ^ 10", 1024),
        c("2 + 3 * 4", 14), c("(2 + 3) * 4", 20), c("2 * 3 ^ 2", 18), c("10 - 2 - 3", 5), c("2 ^ 3 ^ 2", 64),
        c("8 / 2 / 2", 2), c("1 / 0", .null), c("0 / 0", .null), c("-7 // 2".replacingOccurrences(of: "-7", with: "(0 - 7)"), -4),
        c("'a' + 'b'", "ab"), e("'n' + 1 == 'n1'", "invalid_binary_op"),
        e("'a' + 1", "invalid_binary_op"), e("1 + true", "invalid_binary_op"), e("null + 1", "invalid_binary_op"),
        e("'a' - 'b'", "invalid_binary_op"), e("[1] + [2]", "invalid_binary_op"), e("'a' * 2", "invalid_binary_op"),
        // Comparison.
        c("2 > 1", true), c("2 <= 1", false), c("1 >= 1", true), c("1 < 1", false), c("1 == 1.0000001", true),
        c("1 == 1.00001", false), c("1 != 1.00001", true), c("'abc' < 'abd'", true), c("'B' < 'a'", true),
        c("'abc' >= 'abc'", true), c("'b' > 'abc'", true), c("'' < 'a'", true),
        c("true == true", true), c("true == false", false), c("null == null", true), c("[1, 2] == [1, 2]", true),
        c("[1, 2] == [2, 1]", false), c("{a: 1} == {a: 1}", true), c("{a: 1} == {a: 2}", false),
        c("1 == '1'", false), c("null == false", false), c("0 == false", false), c("'' == null", false),
        c("is_default_browser == false", true), c("is_default_browser != true", true), c("1 != 'x'", true),
        c("days_since_install != days_since_update", true),
        e("null >= 1", "invalid_binary_op"), e("true > false", "invalid_binary_op"), e("'a' < 1", "invalid_binary_op"),
        e("[1] < [2]", "invalid_binary_op"), e("nothing >= 1", "invalid_binary_op"),
        // `in`.
        c("'en' in locale", true), c("'US' in locale", true), c("'us' in locale", false), c("'' in 'abc'", true),
        c("'bar' in 'foobartek'", true), c("4 in list", false),
        // Membership is serde_json's equality: the context's whole numbers are integers, literals floats (measured on
        // jexl-eval 0.4.0, issue 50).
        c("2 in list", false), c("2 in [1, 2]", true), c("list[1] in [list[1]]", true), c("(list[1] + 0) in [2]", true), c("'a' in names", true),
        c("'1' in list", false), c("'k' in obj", true), c("'v' in obj", false), c("1 in 1", false),
        c("[1] in [[1], [2]]", true), c("null in [null]", true),
        e("1 in 'a1'", "invalid_binary_op"), e("true in 'true'", "invalid_binary_op"), e("1 in obj", "invalid_binary_op"),
        e("'a' in null", "invalid_binary_op"),
        // Logic: one precedence level, left to right; values, not booleans.
        c("true && false", false), c("true || false", true), c("false || true && false", false),
        c("true || false && false", false), c("true || (false && false)", true), c("'foo' && 6 >= 6 && 0 + 1 && true", true),
        c("0 || 'x'", "x"), c("'' || null", .null), c("0 && undefined_thing", 0), c("1 && 2", 2), c("null || 5", 5),
        c("undefined_thing || true", true), c("(1 / 'x') || 'fallback'", "fallback"), e("undefined_thing && true", "undefined_identifier"),
        e("true && undefined_thing", "undefined_identifier"), e("false || undefined_thing", "undefined_identifier"),
        c("list && 1", 1), c("{} && 'obj'", "obj"), c("[] || 'x'", []),
        // Ternary: binds tighter than arithmetic; branches are transform-level.
        c("true ? 1 : 2", 1), c("'' ? 1 : 2", 2), c("nothing ? 'y' : 'n'", "n"), c("list ? 'y' : 'n'", "y"),
        c("1 + (true ? 1 : 2)", 2), c("1 + true ? 1 : 2", 2), c("zero ? 1 : 0 ? 2 : 3", 3),
        e("true ? undefined_thing : 1", "undefined_identifier"), c("false ? undefined_thing : 1", 1),
        // jexl-eval 0.4.0: a test that fails to evaluate is false, so the else branch is taken (issue 50).
        c("undefined_thing ? 1 : 2", 2), c("(nothing >= 1) ? false : true", true), c("('a' > 1) ? 'y' : 'n'", "n"),
        // Transforms.
        c("'128.0'|versionCompare('127.9')", 1), c("'128.0'|versionCompare('128')", 0), c("'93pre'|versionCompare('93')", -1),
        c("os_version|versionCompare('14.!') >= 0", true), c("'14.0'|versionCompare('14.!')", 1), c("'13.9'|versionCompare('14.!')", -1),
        c("'1.2+'|versionCompare('1.3pre')", 0), c("'*'|versionCompare('999')", 1), c("'1.0.0'|versionCompare('1')", 0),
        c("'1.10'|versionCompare('1.9')", 1), c("'1.0a1'|versionCompare('1.0a2')", -1), c("'1.0b1'|versionCompare('1.0a9')", 1),
        e("1|versionCompare('1')", "transform_parameter_error"), e("'1'|versionCompare", "transform_parameter_error"),
        e("'x'|noSuchTransform", "unknown_transform"), e("'x'|eventAverage('Days', 1)", "unknown_transform"),
        c("[client_id, 'bug-1637316-message-aboutwelcome-pull-factor-reinforcement-76-rel-release-76-77']|bucketSample(0, 2000, 10000)", true),
        c("[client_id, 'bug-1637316-message-aboutwelcome-pull-factor-reinforcement-76-rel-release-76-77']|bucketSample(2000, 3000, 10000)", false),
        c("'x'|bucketSample(0, 100, 100)", true), e("'x'|bucketSample(0, 1)", "transform_parameter_error"),
        e("'x'|bucketSample(0, 1, 0)", "transform_parameter_error"),
        c("'homepage_viewed'|eventSum('Years', 4, 0)", 0), c("'never'|eventLastSeen('Days')", .number(Double.greatestFiniteMagnitude)),
        e("'a'|eventSum('days', 1)", "interval_parse_error"), e("'a'|eventSum('Days')", "transform_parameter_error"),
        e("'a'|eventSum('Days', 'one')", "transform_parameter_error"), e("1|eventSum('Days', 1)", "transform_parameter_error"),
        e("'a'|eventLastSeen('Days', 1, 2)", "transform_parameter_error"),
        // Objects.
        e("{a: 1, a: 2}", "duplicate_object_key"), c("{a: locale}.a", "en-US"),
        // Parse errors the real engine would give, with a column.
        e("!is_default_browser", "parse_error"), e("-1", "parse_error"), e("1 +", "parse_error"), e("(1", "parse_error"),
        e("'open", "parse_error"), e("1 2", "parse_error"), e("[,]", "parse_error"), e("a.1", "parse_error"),
        e("'a\\nb'", "parse_error"), e("true ? 1 + 1 : 2", "parse_error"), e("a |", "parse_error"), e("{true: 1}", "parse_error"),
        e("x[.y]", "parse_error"), e("1 === 1", "parse_error"), e("#", "parse_error"), e("", "parse_error"),
    ]

    @Test(arguments: cases) func evaluates(_ row: Case) throws {
        let helper = TargetingHelper(context: Self.context, now: Date(timeIntervalSince1970: 1_790_000_000))
        switch row.expect {
        case .value(let expected):
            do throws(JEXLError) {
                let value = try helper.value(row.expression)
                #expect(value == expected, "\(row.expression)")
            } catch {
                Issue.record("\(row.expression) failed: \(error)")
            }
        case .error(let code):
            do throws(JEXLError) {
                let value = try helper.value(row.expression)
                Issue.record("\(row.expression) gave \(value), expected error \(code)")
            } catch {
                #expect(error.code == code, "\(row.expression): \(error)")
            }
        }
    }

    @Test func theTableHasAtLeast150Cases() {
        #expect(Self.cases.count >= 150)
    }

    @Test func parseErrorsNameTheExpressionAndTheColumn() {
        do throws(JEXLError) {
            _ = try JEXLParser.parse("is_fxa_signed_in && !is_default_browser")
            Issue.record("unary ! parsed")
        } catch {
            #expect(error.column == 21)
            #expect(error.message.contains("column 21"))
            #expect(error.message.contains("is_fxa_signed_in && !is_default_browser"))
            #expect(error.message.contains("unary `!`"))
        }
    }

    @Test func targetingNeedsABoolean() {
        let helper = TargetingHelper(context: Self.context, now: Date())
        #expect(throws: JEXLError.self) { try helper.evaluate("1 + 1") }
        #expect((try? helper.evaluate("'en' in locale")) == true)
    }

    @Test func lintFlagsMixedLogicAndUnknownEvents() {
        #expect(TargetingHelper.lint("a || b && c").count == 1)
        #expect(TargetingHelper.lint("x == 1 && y || z").count == 1)
        // Parentheses say which reading is meant: nothing to warn about.
        #expect(TargetingHelper.lint("(a || b) && c").isEmpty)
        #expect(TargetingHelper.lint("a || (b && c)").isEmpty)
        #expect(TargetingHelper.lint("a && b && c").isEmpty)
        #expect(TargetingHelper.lint("'events.app_opened'|eventCountNonZero('Days', 28, 0) > 0", knownEvents: ["app_cycle.foreground"]).count == 1)
        #expect(TargetingHelper.validate("'x'|preferenceIsUserSet")?.code == "unknown_transform")
        #expect(TargetingHelper.validate("!x")?.code == "parse_error")
        #expect(TargetingHelper.validate("days_since_install < 7") == nil)
    }
}
