import Foundation
import Testing
@testable import SurveyWire

/// `JSONParser` against `JSONDecoder` (decoding `JSONValue`) on the same texts: valid texts read alike, and broken ones
/// are never accepted where `JSONDecoder` refuses them. Seeded, so every run checks the same cases.
@Suite struct JSONParserTests {
    static let stringPieces = ["a", "Z", " ", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\b", "\\f", "\\r", "\\u0041", "\\u00e9", "\\u4e2d",
                               "\\ud83d\\ude00", "é", "中", "😀", "{", "]", ":", ","]
    static let numbers = ["0", "-0", "1", "-1", "12", "3.25", "-0.5", "1e3", "1E-3", "2.5e+2", "123456789012345678901234",
                          "0.000001", "9007199254740993", "1e308", "4.9e-324"]

    static func text(_ rng: inout SeededRandom, depth: Int) -> String {
        func ws() -> String { ["", "", " ", "\n", "\t", "\r\n  "].randomElement(using: &rng)! }
        func string() -> String { "\"" + (0..<Int.random(in: 0...5, using: &rng)).map { _ in stringPieces.randomElement(using: &rng)! }.joined() + "\"" }
        switch depth > 3 ? Int.random(in: 0...3, using: &rng) : Int.random(in: 0...5, using: &rng) {
        case 0: return string()
        case 1: return numbers.randomElement(using: &rng)!
        case 2: return ["true", "false", "null"].randomElement(using: &rng)!
        case 3: return string()
        case 4:
            let items = (0..<Int.random(in: 0...4, using: &rng)).map { _ in ws() + text(&rng, depth: depth + 1) + ws() }
            return "[" + items.joined(separator: ",") + "]"
        default:
            let members = (0..<Int.random(in: 0...4, using: &rng)).map { i in ws() + "\"k\(i)\"" + ws() + ":" + ws() + text(&rng, depth: depth + 1) + ws() }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    /// Breaks a text: a byte changed, dropped or inserted, the text cut, or something tricky spliced in.
    static func mutate(_ bytes: [UInt8], _ rng: inout SeededRandom) -> [UInt8] {
        var out = bytes
        let tricky: [[UInt8]] = [Array("\\".utf8), Array("\"".utf8), Array(",".utf8), Array("}".utf8), [0x00], [0x1F], [0xFF], [0xC3],
                                 Array("\\ud800".utf8), Array("\\udc00".utf8), Array("01".utf8), Array("1.".utf8), Array("-".utf8),
                                 Array("1e".utf8), Array("tru".utf8), Array(" ".utf8), Array("\u{0B}".utf8), Array("1e999".utf8)]
        let at = out.isEmpty ? 0 : Int.random(in: 0..<out.count, using: &rng)
        switch Int.random(in: 0...4, using: &rng) {
        case 0 where !out.isEmpty: out[at] = UInt8.random(in: 0...255, using: &rng)
        case 1 where !out.isEmpty: out.remove(at: at)
        case 2: out.insert(contentsOf: tricky.randomElement(using: &rng)!, at: at)
        case 3: out = Array(out.prefix(at))
        default: out.insert(UInt8.random(in: 0x20...0x7E, using: &rng), at: at)
        }
        return out
    }

    /// The parser may refuse what `JSONDecoder` accepts (trailing commas, UTF-16/32, duplicate names, zeros with exponents);
    /// the routes then fall back to `JSONDecoder`. It must never accept what `JSONDecoder` refuses, nor read a
    /// different value.
    static func sound(_ bytes: [UInt8]) -> Bool {
        guard let ours = try? JSONParser.parse(bytes) else { return true }
        return ours == (try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)))
    }

    @Test func neverAcceptsWhatJSONDecoderRefusesAndReadsEveryValidText() {
        var rng = SeededRandom(seed: 20261123)
        var unsound: [String] = []
        var accepted = 0
        for _ in 0..<10_000 {
            let valid = Array(Self.text(&rng, depth: 0).utf8)
            let ours = try? JSONParser.parse(valid)
            if ours != nil, ours == (try? JSONDecoder().decode(JSONValue.self, from: Data(valid))) { accepted += 1 }
            let broken = Self.mutate(valid, &rng)
            if !Self.sound(broken) { unsound.append(String(decoding: broken, as: UTF8.self)) }
        }
        #expect(accepted == 10_000)
        #expect(unsound.isEmpty, "\(unsound.prefix(5))")
    }

    static func kind(_ value: JSONValue) -> JSONParser.Kind {
        switch value {
        case .object: .object
        case .array: .array
        case .string: .string
        case .number: .number
        case .bool: .bool
        case .null: .null
        }
    }

    /// `kind(of:)` accepts what `parse` accepts (duplicate names aside, which it does not look for) and names its value.
    @Test func kindOfAcceptsWhatParseAcceptsWithoutBuildingIt() {
        var rng = SeededRandom(seed: 20261128)
        var differ: [String] = []
        var accepted = 0
        // Long strings too, so the eight-bytes-at-a-time walk meets every kind of byte at every lane.
        func longString(_ rng: inout SeededRandom) -> String {
            "\"" + (0..<Int.random(in: 8...60, using: &rng)).map { _ in
                Int.random(in: 0...3, using: &rng) == 0 ? Self.stringPieces.randomElement(using: &rng)! : "abcdefgh"
            }.joined() + "\""
        }
        for round in 0..<10_000 {
            let text = round % 2 == 0 ? Self.text(&rng, depth: 0) : "{\"k\": " + longString(&rng) + ", \"n\": [" + longString(&rng) + "]}"
            let valid = Array(text.utf8)
            for bytes in [valid, Self.mutate(valid, &rng), Self.mutate(Self.mutate(valid, &rng), &rng)] {
                let parsed: Result<JSONValue, JSONParser.Failure> = Result { () throws(JSONParser.Failure) in try JSONParser.parse(bytes) }
                let kind = try? JSONParser.kind(of: bytes)
                switch parsed {
                case .success(let value):
                    accepted += 1
                    if kind != Self.kind(value) { differ.append(String(decoding: bytes, as: UTF8.self)) }
                case .failure(let failure) where failure.reason == "duplicate member name":
                    // `parse` stopped at the duplicate; the text may be broken after it too.
                    if kind != nil, kind != .object { differ.append(String(decoding: bytes, as: UTF8.self)) }
                case .failure:
                    if kind != nil { differ.append(String(decoding: bytes, as: UTF8.self)) }
                }
            }
        }
        #expect(accepted >= 10_000)
        #expect(differ.isEmpty, "\(differ.prefix(5))")
        for bad in ["", "{", "[1,]", "{\"a\":1,}", "01", "\"\\ud800\"", "\"\u{01}\"", "[1] 2", "{a:1}", "1e400", "0e5", "<html>"] {
            #expect(throws: JSONParser.Failure.self, "\(bad)") { try JSONParser.kind(of: Array(bad.utf8)) }
        }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.kind(of: [0x22, 0xC3, 0x28, 0x22]) }
        #expect((try? JSONParser.kind(of: Array(" {\"a\": [1, \"é\\u00e9\", null]} ".utf8))) == .object)
        let deep = Array(String(repeating: "[", count: 600).utf8) + Array(String(repeating: "]", count: 600).utf8)
        #expect(throws: JSONParser.Failure(reason: "too deeply nested", offset: 512)) { try JSONParser.kind(of: deep) }
    }

    @Test func refusesWhatJSONRefusesAndSaysWhere() {
        for bad in ["", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "+1", "0x10", "tru", "nul", "\"a", "\"\\x\"", "\"\\u12\"",
                    "\"\\ud800\"", "\"\\udc00\"", "\"\u{01}\"", "[1] 2", "{a:1}", "{\"a\" 1}", "1e400", "-1e400", "4.9e-1324", "0e5", "-0.00e1", "{\"a\":1,\"a\":2}", "NaN", "Infinity", "'a'"] {
            #expect(throws: JSONParser.Failure.self, "\(bad)") { try JSONParser.parse(Array(bad.utf8)) }
        }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        let deep = Array(String(repeating: "[", count: 600).utf8) + Array(String(repeating: "]", count: 600).utf8)
        #expect(throws: JSONParser.Failure(reason: "too deeply nested", offset: 512)) { try JSONParser.parse(deep) }
        let fine = Array(String(repeating: "[", count: 100).utf8) + Array(String(repeating: "]", count: 100).utf8)
        #expect((try? JSONParser.parse(fine)) != nil)
    }

    @Test func providerBodiesReadTheSameAsTheirCodableForms() throws {
        let fcm = #"{"message":{"token":"t1","data":{"a":"1","b":"\u00e9"},"notification":{"title":"T","body":null},"android":{"ttl":"60s","priority":"normal","collapse_key":"k"},"extra":[1,2]},"validate_only":false}"#
        let fast = try RelayWire.FCMSendRequest(json: Array(fcm.utf8))
        #expect(fast == (try JSONDecoder().decode(RelayWire.FCMSendRequest.self, from: Data(fcm.utf8))))
        #expect(fast.validateOnly == false)
        // The whole Message model: other targets, platform options, web and FCM options.
        let whole = #"{"message":{"topic":"news","condition":"'a' in topics","fid":"f1","notification":{"title":"T","image":"https://x/i.png"},"android":{"data":{"type":"survey"},"notification":{"title":"A","icon":"i"}},"apns":{"headers":{"apns-priority":"5"},"payload":{"aps":{"content-available":1},"k":"v"}},"webpush":{"headers":{}},"fcm_options":{"analytics_label":"l"}},"validate_only":true}"#
        let wholeFast = try RelayWire.FCMSendRequest(json: Array(whole.utf8))
        #expect(wholeFast == (try JSONDecoder().decode(RelayWire.FCMSendRequest.self, from: Data(whole.utf8))))
        #expect(wholeFast.validateOnly == true)
        #expect(wholeFast.message.android?.data == ["type": "survey"])
        #expect(wholeFast.message.apns?.headers == ["apns-priority": "5"])
        #expect(wholeFast.message.topic == "news" && wholeFast.message.fid == "f1")
        for refused in [#"{}"#, #"{"message":null}"#, #"{"message":{"token":1}}"#, #"{"message":{"data":{"a":1}}}"#,
                        #"{"message":{"android":"x"}}"#, #"[]"#, #"{"message":{"android":{"data":{"a":1}}}}"#,
                        #"{"message":{"apns":{"headers":{"h":1}}}}"#, #"{"message":{},"validate_only":"yes"}"#] {
            #expect(throws: JSONParser.Failure.self) { try RelayWire.FCMSendRequest(json: Array(refused.utf8)) }
            #expect(throws: (any Error).self) { try JSONDecoder().decode(RelayWire.FCMSendRequest.self, from: Data(refused.utf8)) }
        }
        let ack = #"{"ids":["a","b"],"other":1}"#
        #expect(try RelayWire.AckRequest(json: Array(ack.utf8)) == RelayWire.AckRequest(ids: ["a", "b"]))
        for refused in [#"{"ids":"a"}"#, #"{"ids":[1]}"#, #"{}"#, #"{"ids":null}"#] {
            #expect(throws: JSONParser.Failure.self) { try RelayWire.AckRequest(json: Array(refused.utf8)) }
            #expect(throws: (any Error).self) { try JSONDecoder().decode(RelayWire.AckRequest.self, from: Data(refused.utf8)) }
        }
    }
}
