/// Where a client's pushes come from.
public enum PushSource: Sendable, Equatable {
    /// The trio's relay: a token from `POST <url>/v1/devices`, its event stream held open, each push acked.
    case relay(url: String)
    /// No pushes: device scheduling and `/download_surveys` only (what a client of a real Beiwe server has when the app
    /// brings no push service of its own).
    case none
    /// The host app receives pushes through a service of its own and hands them over with
    /// ``SurveyClient/receive(push:)`` (Beiwe's data fields), and its token with ``SurveyClient/updatePushToken(_:)``
    /// (sent to the server with `/set_fcm_token`).
    case external

    /// The relay's base URL, when the source is the relay.
    var relayURL: String? {
        if case .relay(let url) = self { return url }
        return nil
    }
}
