/// The mobile routes a study server turned out not to have, and how an answer tells a missing route from a route's own
/// refusal.
///
/// Our mock server has two routes the real Beiwe server lacks: `/download_survey` (one survey after a push) and
/// `/confirm_notifications` (push receipts). Against Beiwe they answer its 404 page; Beiwe's apps fetch
/// `/download_surveys` after a push and report receipts in `notification_uuids` on their other requests. A client that
/// read Beiwe's 404 as "that survey was deleted" withdrew every push, and one that retried the receipts route kept them
/// pending for good. So the answer is read: a 404 or 405 that is not a JSON error of the route (our
/// `survey_not_found`), or is the router's own `not_found`/`method_not_allowed`, means the route is missing; it is
/// remembered for the client's run, and the client takes Beiwe's way from then on, without asking again.
///
/// A value type: the client reports answers to it and asks it which way to go.
struct ServerRoutes: Sendable, Equatable {
    /// A route of our mock server that Beiwe does not have.
    enum Route: String, Sendable, CaseIterable {
        /// `/download_survey`: otherwise `/download_surveys`, the pushed surveys taken by id.
        case downloadSurvey = "download_survey"
        /// `/confirm_notifications`: otherwise receipts ride on `/mobile-heartbeat`.
        case confirmNotifications = "confirm_notifications"
    }

    /// What an answer of an optional route says about the route.
    enum Verdict: Sendable, Equatable {
        /// The route exists and answered (whatever the status).
        case present
        /// The server has no such route: remembered; take the other way.
        case missing
    }

    private(set) var missing: Set<Route> = []

    /// Whether `route` is known to be missing.
    func lacks(_ route: Route) -> Bool { missing.contains(route) }

    /// Reads an answer of `route`: `status` and the `{"error": {"code"}}` of its body, if it is one.
    mutating func answered(_ route: Route, status: Int, errorCode: String?) -> Verdict {
        guard Self.isMissingRoute(status: status, errorCode: errorCode) else { return .present }
        missing.insert(route)
        return .missing
    }

    /// A 404 or 405 that no route of ours gave: no JSON error code (Beiwe's HTML page, an empty body, a proxy's page),
    /// or the router's own codes for a path or method it does not serve.
    static func isMissingRoute(status: Int, errorCode: String?) -> Bool {
        guard status == 404 || status == 405 else { return false }
        guard let errorCode else { return true }
        return errorCode == "not_found" || errorCode == "method_not_allowed"
    }
}
