import ArgumentParser
import Foundation
import Messaging
import SurveyWire

/// `survey-cli messaging jexl`: the value of targeting expressions for a context, one JSON line each, as the SDK's
/// targeting evaluates them (jexl-eval 0.4.0's grammar, Nimbus's transforms).
struct MessagingJEXL: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jexl",
        abstract: "Print the value of JEXL targeting expressions for a context, one JSON line each.",
        discussion: """
            Each expression gives {"expression", "value"} or {"expression", "error", "message"} (error is a stable code: \
            parse_error, undefined_identifier, invalid_binary_op, ...). --context is a JSON object of targeting \
            attributes. With --lines, standard input holds one JSON object per line, {"expression": "...", "context": \
            {...}} (context optional, default --context's), and each gives one output line, in order. Exit status: 0 when \
            every expression has a value, 1 when one or more gave an error, 64 for input that cannot be read.
            """)

    @Argument(help: "Expressions to evaluate.") var expressions: [String] = []
    @Option(help: "Targeting attributes (JSON object file; default {}).") var context: String?
    @Option(help: "Evaluation time (RFC 3339; default now).") var now: String?
    @Flag(help: "Read {\"expression\", \"context\"} JSON lines from standard input.") var lines = false

    func validate() throws {
        if lines == !expressions.isEmpty { throw ValidationError("give expressions or --lines, one of the two") }
    }

    func run() async throws {
        var base: [String: JSONValue] = [:]
        if let context {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: context)),
                  let object = (try? WireJSON.decode(JSONValue.self, from: data))?.objectValue else {
                throw ValidationError("--context must name a file holding a JSON object")
            }
            base = object
        }
        guard let at = now.map({ WireTime.parse($0) }) ?? Date() else { throw ValidationError("--now must be an RFC 3339 time") }
        let shared = TargetingHelper(context: base, now: at)
        var failed = false
        func show(_ expression: String, with helper: TargetingHelper) throws {
            var out: [String: JSONValue] = ["expression": .string(expression)]
            do throws(JEXLError) {
                out["value"] = try helper.value(expression)
            } catch {
                out["error"] = .string(error.code)
                out["message"] = .string(error.message)
                failed = true
            }
            print(String(decoding: try WireJSON.encode(JSONValue.object(out)), as: UTF8.self))
        }
        if lines {
            var number = 0
            while let line = readLine(strippingNewline: true) {
                number += 1
                if line.allSatisfy(\.isWhitespace) { continue }
                guard let input = (try? WireJSON.decode(JSONValue.self, from: Data(line.utf8)))?.objectValue,
                      let expression = input["expression"]?.stringValue else {
                    throw ValidationError("line \(number) is not a JSON object with an \"expression\" string")
                }
                var helper = shared
                if let given = input["context"] {
                    guard let object = given.objectValue else { throw ValidationError("line \(number): \"context\" must be a JSON object") }
                    helper = TargetingHelper(context: object, now: at)
                }
                try show(expression, with: helper)
            }
        } else {
            for expression in expressions { try show(expression, with: shared) }
        }
        if failed { throw ExitCode(1) }
    }
}
