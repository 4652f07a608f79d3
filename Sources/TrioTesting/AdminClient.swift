import Foundation
import SurveyWire
import Transport

/// A non-2xx answer from the admin or control API, with its `{"error"}` code when present.
public struct APIFailure: Error, Sendable, CustomStringConvertible {
    /// The HTTP status answered.
    public var status: Int
    /// The error body's `code`, when the body had one.
    public var code: String?
    /// The response body as text.
    public var body: String
    /// `HTTP status code: body`.
    public var description: String { "HTTP \(status) \(code ?? ""): \(body)" }
}

/// Shared JSON request plumbing of the typed clients.
struct JSONAPI: Sendable {
    let baseURL: String
    let http: TransportClient

    func call(_ method: String, _ path: String, body: (some Encodable)? = Optional<JSONValue>.none, expect: Set<Int> = [200, 201, 204]) async throws -> TransportResponse {
        let request: TransportRequest
        if let body {
            request = try TransportRequest.json(baseURL + path, method: method, body: body)
        } else {
            request = TransportRequest(method: method, url: baseURL + path)
        }
        let response = try await http.send(request)
        guard expect.contains(response.status) else {
            throw APIFailure(status: response.status, code: (try? response.decode(ErrorBody.self))?.error.code, body: response.text)
        }
        return response
    }

    func get<T: Decodable>(_ type: T.Type, _ path: String) async throws -> T {
        try await call("GET", path).decode(type)
    }

    static func query(_ items: [(String, String?)]) -> String {
        let present = items.compactMap { k, v in v.map { "\(k)=\(FormBody.encode($0))" } }
        return present.isEmpty ? "" : "?" + present.joined(separator: "&")
    }
}

/// Typed client of the mock server's admin API (PROTOCOL.md §2).
public struct AdminClient: Sendable {
    let api: JSONAPI

    /// A client of the server at `baseURL` (such as `http://127.0.0.1:PORT`), sending through `http`.
    public init(baseURL: String, http: TransportClient) { api = JSONAPI(baseURL: baseURL, http: http) }

    /// `GET /__admin/health`: whether the server answers 200.
    public func health() async throws -> Bool { try await api.call("GET", "/__admin/health").status == 200 }
    /// `GET /__admin/info`: version, pid, URL, store, KDF iterations and relays.
    public func info() async throws -> AdminWire.Info { try await api.get(AdminWire.Info.self, "/__admin/info") }
    /// `POST /__admin/reset`: wipes everything.
    public func reset() async throws { _ = try await api.call("POST", "/__admin/reset") }

    /// `POST /__admin/studies`: creates a study and returns it.
    public func createStudy(_ body: AdminWire.CreateStudy) async throws -> AdminWire.Study {
        try await api.call("POST", "/__admin/studies", body: body).decode(AdminWire.Study.self)
    }
    /// `GET /__admin/studies/{id}`.
    public func study(_ id: String) async throws -> AdminWire.Study { try await api.get(AdminWire.Study.self, "/__admin/studies/\(id)") }
    /// `GET /__admin/studies/{id}/stats`.
    public func stats(_ id: String) async throws -> AdminWire.StudyStats { try await api.get(AdminWire.StudyStats.self, "/__admin/studies/\(id)/stats") }

    /// `POST /__admin/studies/{id}/participants`: one participant (with the given id or password), or `count` random ones; returns their credentials.
    public func createParticipants(study: String, _ body: AdminWire.CreateParticipants = .init()) async throws -> [AdminWire.Credentials] {
        try await api.call("POST", "/__admin/studies/\(study)/participants", body: body).decode(AdminWire.CreatedParticipants.self).participants
    }
    /// `GET /__admin/participants/{patient_id}`.
    public func participant(_ id: String) async throws -> AdminWire.Participant {
        try await api.get(AdminWire.Participant.self, "/__admin/participants/\(id)")
    }
    /// `POST /__admin/participants/{id}/interventions`: sets an intervention date (an anchor of relative schedules).
    public func addIntervention(patient: String, _ body: AdminWire.Intervention) async throws {
        _ = try await api.call("POST", "/__admin/participants/\(patient)/interventions", body: body)
    }

    /// `POST /__admin/studies/{id}/surveys`: returns the new survey's id.
    public func createSurvey(study: String, _ body: AdminWire.CreateSurvey) async throws -> String {
        try await api.call("POST", "/__admin/studies/\(study)/surveys", body: body).decode(AdminWire.SurveyCreated.self).surveyID
    }
    /// `PUT /__admin/surveys/{id}`: replaces the survey (occurrences already sent are never sent again).
    public func replaceSurvey(_ id: String, _ body: AdminWire.CreateSurvey) async throws {
        _ = try await api.call("PUT", "/__admin/surveys/\(id)", body: body)
    }
    /// `DELETE /__admin/surveys/{id}`: deletes it and drops its pending occurrences.
    public func deleteSurvey(_ id: String) async throws { _ = try await api.call("DELETE", "/__admin/surveys/\(id)") }

    /// `GET /__admin/studies/{id}/occurrences`: pending occurrences (every status with `all`), of one participant when given.
    public func occurrences(study: String, patient: String? = nil, all: Bool = false, wait: ListingWait? = nil) async throws -> [AdminWire.Occurrence] {
        try await api.get([AdminWire.Occurrence].self,
                          "/__admin/studies/\(study)/occurrences" + JSONAPI.query([("patient_id", patient), ("status", all ? "all" : nil)] + ListingWait.items(wait)))
    }
    /// `GET /__admin/studies/{id}/pushes`: the send log, of one participant when given.
    /// With `wait`, answered once that many pushes are logged (or when its time is up, with what there is).
    public func pushes(study: String, patient: String? = nil, wait: ListingWait? = nil) async throws -> [AdminWire.PushLogEntry] {
        try await api.get([AdminWire.PushLogEntry].self, "/__admin/studies/\(study)/pushes" + JSONAPI.query([("patient_id", patient)] + ListingWait.items(wait)))
    }
    /// One push of the send log, by uuid.
    public func push(_ uuid: String) async throws -> AdminWire.PushLogEntry {
        try await api.get(AdminWire.PushLogEntry.self, "/__admin/pushes/\(uuid)")
    }

    /// The request journal, newest first.
    public func requests(path: String? = nil, limit: Int = 1000, participant: String? = nil, study: String? = nil, since: String? = nil,
                         wait: ListingWait? = nil) async throws -> [JournalWire.Entry] {
        let query = JSONAPI.query([("limit", String(limit)), ("path", path), ("participant", participant), ("study", study), ("since", since)]
                                  + ListingWait.items(wait))
        return try await api.get(JournalWire.Listing.self, "/__admin/requests" + query).requests
    }

    /// `PUT /__admin/faults` with a list of rules (replaces all; `[]` clears).
    public func setFaults(_ rules: [AdminWire.FaultRule]) async throws {
        _ = try await api.call("PUT", "/__admin/faults", body: rules)
    }
    /// `PUT /__admin/features/{app}/{feature}`: `{"rollout"?: value, "experiment"?: {"slug", "branches": [...]}}`.
    public func setFeature(app: String, feature: String, _ body: JSONValue) async throws {
        _ = try await api.call("PUT", "/__admin/features/\(app)/\(feature)", body: body)
    }
    /// `GET /features/{app}?client_id=`: what a device with that client id gets.
    public func features(app: String, clientID: String) async throws -> AdminWire.Features {
        try await api.get(AdminWire.Features.self, "/features/\(app)" + JSONAPI.query([("client_id", clientID)]))
    }
    /// `GET /__admin/studies/{id}/submissions`: decrypted answers, of one participant when given.
    public func submissions(study: String, patient: String? = nil, wait: ListingWait? = nil) async throws -> [AdminWire.Submission] {
        try await api.get([AdminWire.Submission].self, "/__admin/studies/\(study)/submissions" + JSONAPI.query([("patient_id", patient)] + ListingWait.items(wait)))
    }
    /// `GET /__admin/telemetry`: stored pings, newest last, filtered by client, ping name and time when given.
    public func telemetry(clientID: String? = nil, ping: String? = nil, since: String? = nil, wait: ListingWait? = nil) async throws -> [AdminWire.StoredPing] {
        try await api.get([AdminWire.StoredPing].self,
                          "/__admin/telemetry" + JSONAPI.query([("client_id", clientID), ("ping", ping), ("since", since)] + ListingWait.items(wait)))
    }

    /// Missing `ping_info.seq` numbers per client and ping name.
    public func telemetryGaps(clientID: String? = nil) async throws -> [AdminWire.SeqGaps] {
        try await api.get([AdminWire.SeqGaps].self, "/__admin/telemetry/gaps" + JSONAPI.query([("client_id", clientID)]))
    }

    /// `GET /__admin/studies/{id}/clock`.
    public func clock(study: String) async throws -> AdminWire.Clock { try await api.get(AdminWire.Clock.self, "/__admin/studies/\(study)/clock") }
    /// Freezes the study's clock at `time`, walking every due moment on the way; returns what fired.
    public func freezeClock(study: String, at time: String) async throws -> AdminWire.ClockResult {
        try await api.call("POST", "/__admin/studies/\(study)/clock", body: AdminWire.ClockRequest(freezeAt: time)).decode(AdminWire.ClockResult.self)
    }
    /// Moves the study's clock `seconds` ahead, walking every due moment in between; returns what fired.
    public func advanceClock(study: String, seconds: Int) async throws -> AdminWire.ClockResult {
        try await api.call("POST", "/__admin/studies/\(study)/clock", body: AdminWire.ClockRequest(advanceSeconds: seconds)).decode(AdminWire.ClockResult.self)
    }
    /// Returns the study's clock to real time, sending what fell due meanwhile.
    public func realClock(study: String) async throws -> AdminWire.ClockResult {
        try await api.call("POST", "/__admin/studies/\(study)/clock", body: AdminWire.ClockRequest(real: true)).decode(AdminWire.ClockResult.self)
    }
}

/// Typed client of the relay's control API (PROTOCOL.md §5) plus its provider API, for tests that push directly.
public struct RelayControlClient: Sendable {
    let api: JSONAPI

    /// A client of the server at `baseURL` (such as `http://127.0.0.1:PORT`), sending through `http`.
    public init(baseURL: String, http: TransportClient) { api = JSONAPI(baseURL: baseURL, http: http) }

    /// `GET /__control/health`: whether the relay answers 200.
    public func health() async throws -> Bool { try await api.call("GET", "/__control/health").status == 200 }
    /// `GET /__control/devices/{token}`: the device's connection, pending messages and counters.
    public func device(_ token: String) async throws -> RelayWire.DeviceView { try await api.get(RelayWire.DeviceView.self, "/__control/devices/\(token)") }
    /// `PUT /__control/devices/{token}` `{"reachable"}`: makes a device reachable or not.
    public func setReachable(_ token: String, _ reachable: Bool) async throws {
        struct Body: Encodable { var reachable: Bool }
        _ = try await api.call("PUT", "/__control/devices/\(token)", body: Body(reachable: reachable))
    }
    /// `GET /__control/trace`: the relay's per-message trace entries, of one token when given.
    /// `event` keeps one kind (`acked`, `delivered`, ...); with `wait`, answered once that many entries match.
    public func trace(token: String? = nil, event: String? = nil, wait: ListingWait? = nil) async throws -> [JSONValue] {
        try await api.get([JSONValue].self, "/__control/trace" + JSONAPI.query([("token", token), ("event", event)] + ListingWait.items(wait)))
    }
    /// `POST /__control/reset`: clears the relay.
    public func reset() async throws { _ = try await api.call("POST", "/__control/reset") }

    /// `PUT /__control/faults`: replaces the faults of the body's scope (one device, or global); `{}` clears them.
    public func setFaults(_ faults: RelayWire.Faults) async throws {
        _ = try await api.call("PUT", "/__control/faults", body: faults)
    }

    /// Registers a device directly (what an SDK does first).
    public func registerDevice(platform: String, appID: String = "test") async throws -> String {
        try await api.call("POST", "/v1/devices", body: RelayWire.DeviceRequest(platform: platform, appID: appID)).decode(RelayWire.TokenResponse.self).token
    }

    /// Sends an FCM-style push (`messages:send`) carrying `data`; returns the raw response (any status).
    public func sendFCM(token: String, data: [String: String], project: String = "survey-trio") async throws -> TransportResponse {
        let body = RelayWire.FCMSendRequest(message: .init(token: token, data: data))
        return try await api.http.send(try .json(api.baseURL + "/v1/projects/\(project)/messages:send", body: body))
    }

    /// Sends an APNs-style push; returns the raw response (any status).
    public func sendAPNs(token: String, payload: JSONValue, headers: [(String, String)] = []) async throws -> TransportResponse {
        var request = try TransportRequest.json(api.baseURL + "/3/device/\(token)", body: payload)
        request.headers += headers.map { (name: $0.0, value: $0.1) }
        return try await api.http.send(request)
    }
}


/// A listing's wait (PROTOCOL.md §8): the server answers once `minCount` items match, or when `within` is over with
/// what there is. A test waits for what it expects instead of sleeping.
public struct ListingWait: Sendable {
    /// The items that end the wait.
    public var minCount: Int
    /// The longest wait (at most 60 s).
    public var within: Duration

    /// Waits for `minCount` items, at most `within`.
    public init(minCount: Int = 1, within: Duration = .seconds(10)) {
        self.minCount = minCount
        self.within = within
    }

    static func items(_ wait: ListingWait?) -> [(String, String?)] {
        guard let wait else { return [] }
        let millis = wait.within.components.seconds * 1000 + wait.within.components.attoseconds / 1_000_000_000_000_000
        return [("wait", "\(millis)ms"), ("min_count", String(wait.minCount))]
    }
}
