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

    static func ping(state: inout ClientState, configuration: SurveyClientConfiguration, now: Date, reason: String) -> TelemetryPing {
        let start = state.pendingStart ?? WireTime.format(now, milliseconds: true)
        let startMillis = WireTime.parse(start).map(WireTime.epochMillis) ?? WireTime.epochMillis(now)
        let events = state.pendingEvents.map {
            TelemetryPing.Event(timestamp: max(0, $0.timestampMillis - startMillis), category: $0.category, name: $0.name, extra: $0.extra)
        }
        let ping = TelemetryPing(
            pingInfo: .init(seq: state.pingSeq, startTime: start, endTime: WireTime.format(now, milliseconds: true), reason: reason),
            clientInfo: .init(clientID: state.clientID, appBuild: SurveyClient.sdkVersion, appDisplayVersion: SurveyClient.sdkVersion,
                              os: configuration.platform == .ios ? "iOS" : "Android",
                              osVersion: ProcessInfo.processInfo.operatingSystemVersionString, locale: "en-US",
                              telemetrySDKBuild: "survey-sdk \(SurveyClient.sdkVersion)"),
            events: events, metrics: nil)
        state.pingSeq += 1
        state.pendingEvents = []
        state.pendingStart = nil
        return ping
    }
}
