import ArgumentParser
import Foundation
import Messaging
import SurveyWire

/// `survey-cli messaging eval`: which message a recipe would show for a context, and why; `messaging jexl`: the value
/// of targeting expressions.
struct MessagingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messaging", abstract: "Check in-app messaging recipes offline.", subcommands: [MessagingEval.self, MessagingJEXL.self])
}

struct MessagingEval: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eval",
        abstract: "Print which message a recipe would show on a surface for a context, and each trigger's value.",
        discussion: """
            --recipe is a `messaging` feature value ({"messages": ..., "triggers": ...}), merged over Firefox's shipped \
            styles, actions and triggers unless --no-defaults. --context is a JSON object of targeting attributes \
            (locale, days_since_install, is_default_browser, ...). --event homepage_viewed=2 records an event that many \
            times (as distinct views) before evaluating. Exit status: 0 when evaluated, 64 for a recipe or context that \
            cannot be read.
            """)

    @Option(help: "The messaging recipe (JSON file).") var recipe: String
    @Option(help: "Targeting attributes (JSON object file).") var context: String
    @Option(help: "The surface to select for.") var surface = "microsurvey"
    @Option(name: .customLong("event"), help: "EVENT_ID=COUNT recorded before evaluating (repeatable).") var events: [String] = []
    @Option(help: "Evaluation time (RFC 3339; default now).") var now: String?
    @Flag(help: "Do not merge the recipe over Firefox's shipped styles, actions and triggers.") var noDefaults = false
    @Flag(help: "Print one JSON object instead of text.") var json = false

    func run() async throws {
        let recipeValue: JSONValue
        let contextValue: [String: JSONValue]
        do {
            recipeValue = try WireJSON.decode(JSONValue.self, from: Data(contentsOf: URL(fileURLWithPath: recipe)))
            guard let object = try WireJSON.decode(JSONValue.self, from: Data(contentsOf: URL(fileURLWithPath: context))).objectValue else {
                throw ValidationError("--context must hold a JSON object")
            }
            contextValue = object
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("cannot read the recipe or the context: \(error)")
        }
        guard let at = now.map({ WireTime.parse($0) }) ?? Date() else { throw ValidationError("--now must be an RFC 3339 time") }
        var store = EventStore()
        for spec in events {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let count = Int(parts[1]), count >= 0 else { throw ValidationError("--event takes EVENT_ID=COUNT, not \(spec)") }
            for n in 0..<count { store.record(parts[0], viewID: "cli-\(n)", at: at) }
        }
        let loaded: MessagingRecipe
        do throws(MessagingError) {
            loaded = try MessagingRecipe(feature: noDefaults ? recipeValue : FeatureMerge.merge(FirefoxMessagingDefaults.feature, recipeValue),
                                         knownEvents: noDefaults ? nil : FirefoxMessagingDefaults.eventIDs)
        } catch {
            throw ValidationError("the recipe is invalid: \(error.message)")
        }
        var messages = MessageStore()
        let selection = MessageSelector.next(for: surface, recipe: loaded, store: &messages,
                                             helper: TargetingHelper(context: contextValue, events: store, now: at), sessionID: "cli", now: at)
        if json {
            var out: [String: JSONValue] = ["surface": .string(surface), "selected": selection.message.map { .string($0.key) } ?? .null]
            out["trace"] = (try? WireJSON.decode(JSONValue.self, from: WireJSON.encode(selection.trace))) ?? .null
            out["malformed"] = .array(loaded.malformed.map { ["key": .string($0.key), "reason": .string($0.reason)] })
            out["notes"] = .array(loaded.notes.map { .string($0) })
            print(String(decoding: try WireJSON.encode(out), as: UTF8.self))
            return
        }
        print(selection.message.map { "would show: \($0.key) (surface \(surface))" } ?? "would show: nothing on surface \(surface)")
        for entry in selection.trace {
            print("  \(entry.key) [priority \(entry.priority)]: \(entry.outcome)")
            for t in entry.triggers { print("    trigger-if-all \(t.name) = \(t.result)    \(t.expression)") }
            for t in entry.exceptions { print("    except-if-any \(t.name) = \(t.result)    \(t.expression)") }
        }
        for bad in loaded.malformed { print("  malformed \(bad.key): \(bad.reason)") }
        for note in loaded.notes { print("  note: \(note)") }
    }
}
