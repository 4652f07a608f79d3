import Foundation
import SurveyWire
import Testing

/// What Glean's own SDKs send is a ping (PROTOCOL.md §8): no client id in custom pings, no locale from the Python SDK,
/// no `events` when there are none, and fields the trio does not use.
@Suite struct GleanPingTests {
    @Test func aCustomPingWithoutClientIDLocaleOrEventsIsAPing() throws {
        let body = #"""
        {"ping_info": {"seq": 0, "start_time": "2026-11-25T05:00:00.000+00:00", "end_time": "2026-11-25T05:01:00.000+00:00",
                       "experiments": {}},
         "client_info": {"telemetry_sdk_build": "71.0.0", "first_run_date": "2026-11-25+00:00", "os": "Linux",
                         "os_version": "6.1", "architecture": "x86_64", "app_build": "Unknown", "app_display_version": "1.0",
                         "app_channel": "testing"},
         "metrics": {"counter": {"survey.opened": 2}}}
        """#
        let ping = try JSONDecoder().decode(TelemetryPing.self, from: Data(body.utf8))
        #expect(ping.clientInfo.clientID == nil)
        #expect(ping.clientInfo.locale == nil)
        #expect(ping.clientInfo.architecture == "x86_64" && ping.clientInfo.firstRunDate == "2026-11-25+00:00")
        #expect(ping.events.isEmpty)
        try ping.checkRanges()
    }

    @Test func whatTheSchemaRequiresIsStillRequired() {
        for missing in ["app_build", "os", "telemetry_sdk_build"] {
            var info: [String: String] = ["app_build": "1", "app_display_version": "1", "os": "Linux", "os_version": "6",
                                          "telemetry_sdk_build": "71"]
            info[missing] = nil
            let body = try! JSONSerialization.data(withJSONObject: [
                "ping_info": ["seq": 0, "start_time": "a", "end_time": "b"], "client_info": info,
            ] as [String: Any])
            #expect(throws: (any Error).self, "\(missing)") { try JSONDecoder().decode(TelemetryPing.self, from: body) }
        }
    }

    /// Glean's pipeline requires `architecture` and `first_run_date` (PROTOCOL.md §8): the server refuses a ping
    /// without them with `missing_field`, though the type still reads one (pings an older SDK queued on disk).
    @Test func architectureAndFirstRunDateAreRequiredAtIngest() throws {
        let base = try JSONDecoder().decode(TelemetryPing.self, from: Data(#"""
        {"ping_info": {"seq": 0, "start_time": "a", "end_time": "b"},
         "client_info": {"app_build": "1", "app_display_version": "1", "os": "Linux", "os_version": "6", "telemetry_sdk_build": "71",
                         "architecture": "x86_64", "first_run_date": "2026-11-25+00:00"}}
        """#.utf8))
        try base.checkRanges()
        var noArchitecture = base
        noArchitecture.clientInfo.architecture = nil
        #expect(throws: WireRangeError(code: "missing_field", field: "client_info.architecture",
                                       message: "'client_info.architecture' is required (Glean's pipeline requires it)")) { try noArchitecture.checkRanges() }
        var noFirstRun = base
        noFirstRun.clientInfo.firstRunDate = ""
        #expect(throws: WireRangeError.self) { try noFirstRun.checkRanges() }
    }
}
