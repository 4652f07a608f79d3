import Foundation
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// Random valid and invalid bodies against every admin and control route of the live servers (seeded, so a failure
/// replays): whatever the body, the answer is never a 5xx, every refusal is the JSON error body with a code, and
/// both servers still answer afterwards.
@Suite(.timeLimit(.minutes(3))) struct AdminPropertyTests {
    /// Bodies per route: bounded, so the suite takes seconds.
    static let bodiesPerRoute = 120

    @Test func randomBodiesNeverCrashOrMisleadEitherServer() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let token = try await trio.control.registerDevice(platform: "android")
            let s = trio.server.url, r = trio.relay.url
            let routes: [(method: String, url: String, template: JSONValue)] = [
                ("POST", s + "/__admin/studies", ["name": "S", "timezone": "America/Chicago", "scheduling": "server",
                                                  "clock": ["frozen_at": "2026-05-04T13:59:00Z"], "max_delay_minutes": 30,
                                                  "per_participant_keys": false, "interventions": ["a"], "device_settings": ["gps": true]]),
                ("POST", s + "/__admin/studies/\(setup.study.studyID)/participants", ["count": 2]),
                ("POST", s + "/__admin/studies/\(setup.study.studyID)/surveys", [
                    "name": "Q", "survey_type": "tracking_survey",
                    "content": [["question_id": "q", "question_type": "slider", "question_text": "?", "min": "0", "max": "9"]],
                    "schedules": [["type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0, "from": ["day": 2]],
                                  ["type": "relative", "days_after": 3, "hour": 1, "minute": 2]]]),
                ("PUT", s + "/__admin/surveys/\(setup.surveyID)", [
                    "name": "Q", "survey_type": "tracking_survey", "content": [],
                    "schedules": [["type": "absolute", "date": "2026-05-05", "hour": 9, "minute": 0]]]),
                ("POST", s + "/__admin/studies/\(setup.study.studyID)/clock", ["advance_seconds": 60]),
                ("POST", s + "/__admin/participants/\(setup.credentials.patientID)/interventions", ["name": "a", "date": "2026-05-01"]),
                ("PUT", s + "/__admin/faults", [["route": "/upload", "status": 503, "probability": 0.0, "delay_ms": ["min": 0, "max": 1]]]),
                ("PUT", s + "/__admin/features/app/feature", ["rollout": ["x": 1],
                                                              "experiment": ["slug": "e", "branches": [["slug": "a", "ratio": 1, "value": 2]]]]),
                ("PUT", r + "/__control/faults", ["seed": 1, "drop_rate": 0.0, "delay_ms": ["min": 0, "max": 1], "reorder_window": 0]),
                ("PUT", r + "/__control/devices/\(token)", ["reachable": true]),
                ("POST", r + "/__control/clock", ["advance_seconds": 1]),
                ("POST", r + "/v1/devices", ["platform": "android", "app_id": "a"]),
                ("POST", r + "/v1/devices/\(token)/ack", ["ids": ["x"]]),
                ("POST", r + "/v1/projects/p/messages:send", ["message": ["token": .string(token), "data": ["type": "survey"],
                                                                          "android": ["ttl": "60s", "priority": "high"]]]),
            ]
            var random = SeededRandom(seed: 20261123)
            var statuses: [Int: Int] = [:]
            for route in routes {
                for _ in 0..<Self.bodiesPerRoute {
                    let body = BodyMutator.mutate(route.template, &random)
                    let response = try await trio.http.send(
                        TransportRequest(method: route.method, url: route.url, headers: [("Content-Type", "application/json")], body: body))
                    statuses[response.status, default: 0] += 1
                    #expect(response.status < 500, "\(route.method) \(route.url) answered \(response.status) to \(String(decoding: body, as: UTF8.self).prefix(300))")
                    if response.status >= 400 && !route.url.contains("/v1/") {
                        #expect(errorCode(response) != nil, "\(route.url): \(response.status) without a JSON error body: \(response.text.prefix(200))")
                    }
                }
            }
            #expect(try await trio.admin.health())
            #expect(try await trio.control.health())
            // Both kinds of answer happened: the generator is neither all-valid nor all-garbage.
            #expect(statuses.keys.contains { $0 < 300 } && statuses.keys.contains { $0 >= 400 }, "\(statuses)")
        }
    }
}
}

/// Turns a valid body into a random neighbour: values swapped for other types, extreme numbers, long or odd strings,
/// unknown keys, deep nesting, or bytes that are not JSON at all.
enum BodyMutator {
    static let extremes: [JSONValue] = [
        .number(-1), .number(0), .number(1e300), .number(-1e300), .number(9_007_199_254_740_993), .number(0.5), .null, .bool(true),
        .string(""), .string(String(repeating: "x", count: 10_000)), .string("\u{0}"), .string("9999-12-31T23:59:59Z"),
        .string("GMT+5"), .string("../../etc"), .array([]), .object([:]),
    ]

    static func mutate(_ template: JSONValue, _ random: inout SeededRandom) -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            // Not JSON, or JSON with integers past 64 bits that no Double holds exactly.
            return Array(["{", "[1,2", "\u{0}", "{\"name\": 1e999999}", "{\"advance_seconds\": 9223372036854775808}",
                          "{\"count\": -9223372036854775809}", String(repeating: "[", count: 5_000)]
                .randomElement(using: &random)!.utf8)
        case 1:
            var deep: JSONValue = .number(1)
            for _ in 0..<Int.random(in: 50...400, using: &random) { deep = .array([deep]) }
            return encode(deep)
        default:
            var value = template
            for _ in 0..<Int.random(in: 1...3, using: &random) { value = mutateOnce(value, &random) }
            return encode(value)
        }
    }

    static func mutateOnce(_ value: JSONValue, _ random: inout SeededRandom) -> JSONValue {
        switch value {
        case .object(var members):
            guard !members.isEmpty, Int.random(in: 0..<6, using: &random) != 0 else {
                members["unknown_\(Int.random(in: 0..<3, using: &random))"] = extremes.randomElement(using: &random)!
                return .object(members)
            }
            let key = members.keys.sorted().randomElement(using: &random)!
            switch Int.random(in: 0..<4, using: &random) {
            case 0: members[key] = nil
            case 1: members[key] = extremes.randomElement(using: &random)!
            default: members[key] = mutateOnce(members[key]!, &random)
            }
            return .object(members)
        case .array(var items):
            guard !items.isEmpty else { return .array([extremes.randomElement(using: &random)!]) }
            let index = Int.random(in: 0..<items.count, using: &random)
            if Int.random(in: 0..<4, using: &random) == 0 { items += Array(repeating: items[index], count: Int.random(in: 1...50, using: &random)) }
            items[index] = mutateOnce(items[index], &random)
            return .array(items)
        case .number(let n):
            return [.number(-n), .number(n * 1e12), .number(n + 0.5), .number(Double(Int32.max) + 1), .string("\(n)")]
                .randomElement(using: &random)!
        default:
            return extremes.randomElement(using: &random)!
        }
    }

    static func encode(_ value: JSONValue) -> [UInt8] {
        (try? WireJSON.encode(value)).map(Array.init) ?? Array("null".utf8)
    }
}
