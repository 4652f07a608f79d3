import Foundation
import SurveyCrypto
import SurveyWire

/// Builds Glean-shaped pings from recorded events. Pure: time and ids are passed in.
enum PingBuilder {
    /// The document id of a client's ping number `seq`: a UUID-shaped digest of both, so a ping assembled again
    /// after a crash (same events, same unsaved `seq`) gets the same id and the server stores it once.
    static func documentID(clientID: String, pingName: String, seq: Int) -> String {
        let hex = SHA256.hash("\(clientID):\(pingName):\(seq)").prefix(16).map { String(format: "%02x", $0) }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    /// A day as Glean writes `first_run_date`: the local date and the zone's offset then (`2026-11-25-06:00`).
    static func gleanDate(_ date: Date, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        let offset = timeZone.secondsFromGMT(for: date) / 60
        let sign = offset < 0 ? "-" : "+"
        return String(format: "%04d-%02d-%02d%@%02d:%02d", day.year ?? 1970, day.month ?? 1, day.day ?? 1, sign, abs(offset) / 60, abs(offset) % 60)
    }

    /// Ping number `seq` of `events` (times relative to the first one; none for `baseline` and `deletion-request`),
    /// made `now` for `reason`.
    static func ping(events recorded: [ClientState.PendingEvent], seq: Int, clientID: String, configuration: SurveyClientConfiguration,
                     now: Date, reason: String, firstRunDate: String, metrics: JSONValue? = nil) -> TelemetryPing {
        let startMillis = recorded.map(\.timestampMillis).min() ?? WireTime.epochMillis(now)
        let start = WireTime.format(Date(timeIntervalSince1970: Double(startMillis) / 1000), milliseconds: true)
        let events = recorded.map {
            TelemetryPing.Event(timestamp: max(0, $0.timestampMillis - startMillis), category: $0.category, name: $0.name, extra: $0.extra)
        }
        return TelemetryPing(
            pingInfo: .init(seq: seq, startTime: start, endTime: WireTime.format(now, milliseconds: true), reason: reason),
            clientInfo: .init(clientID: clientID, appBuild: SurveyClient.sdkVersion, appDisplayVersion: SurveyClient.sdkVersion,
                              os: configuration.platform == .ios ? "iOS" : "Android",
                              osVersion: ProcessInfo.processInfo.operatingSystemVersionString, locale: "en-US",
                              telemetrySDKBuild: "survey-sdk \(SurveyClient.sdkVersion)", architecture: HostOS.architecture,
                              firstRunDate: firstRunDate),
            events: events, metrics: metrics)
    }
}
