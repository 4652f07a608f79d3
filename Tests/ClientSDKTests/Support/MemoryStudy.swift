import Foundation
import Synchronization
import SurveyCrypto
import SurveyWire
import Transport
@testable import ClientSDK

/// A study server and a push relay kept in memory, reached through ``HTTPTransport``: a client's whole flows
/// (registration, the push stream, fetches, acks, uploads, token renewal) run in a unit test, without processes or
/// sockets, and a test can hold any route's requests to drive an interleaving step by step.
///
/// The routes answer as the mock server and the relay do (PROTOCOL.md §1, §4), with `beiweOnly` as the real Beiwe
/// does for the two routes it lacks (its HTML 404 page).
final class MemoryStudy: HTTPTransport {
    static let serverURL = "http://study.test"
    static let relayURL = "http://relay.test"
    /// One key for every test (making an RSA-2048 key takes a while).
    static let sharedKey: RSAKey = try! RSAKey.generate()
    /// The study's key pair: its public half is sent at registration, its private half decrypts uploads.
    let key: RSAKey

    /// A request as the study or the relay saw it.
    struct Seen: Sendable {
        var method: String
        var path: String
        var form: [String: String]
        var headers: [(name: String, value: String)]
        /// The raw body (telemetry pings are JSON, not a form).
        var body: [UInt8] = []
        /// The path as sent (iOS devices add `/ios` to the mobile routes; `path` has it removed).
        var sentPath = ""
        /// The `filename` of a multipart `file` part (iOS uploads).
        var fileName: String?
    }

    /// A telemetry ping the ingestion route took (`/submit/<app>/<ping>/1/<document id>`); its body is decoded when
    /// it came without gzip (`.null` otherwise).
    struct Ping: Sendable {
        var name: String
        var documentID: String
        var body: JSONValue
    }

    private struct Message: Sendable {
        var id: String
        var data: [UInt8]
    }

    private struct State {
        var seen: [Seen] = []
        var minted = 0
        /// Tokens the relay no longer knows (the stream answers 410).
        var gone: Set<String> = []
        /// Unacked messages per token, sent on every stream open.
        var backlog: [String: [Message]] = [:]
        var streams: [String: AsyncThrowingStream<[UInt8], any Error>.Continuation] = [:]
        var surveys: [String: SurveyEntry] = [:]
        /// Answers that replace a route's next ones: path → statuses, first first.
        var faults: [String: [(status: Int, code: String)]] = [:]
        /// Routes whose requests wait until released.
        var held: Set<String> = []
        var waiting: [String: [(id: UUID, continuation: CheckedContinuation<Void, Never>)]] = [:]
        var beiweOnly = false
        var scheduling = "server"
        /// Tokens whose open stream went silent (a connection dropped without a FIN): nothing reaches it any more.
        var silent: Set<String> = []
        /// Whether Glean's ingestion route (`/submit/...`) is served (404 otherwise, as on Beiwe).
        var ingests = false
        /// Beiwe's `device_settings.check_for_new_surveys_frequency_seconds` in the registration answer, when set.
        var checkFrequency: Int?
        /// Pings taken, and the status every ping gets instead while set.
        var pings: [Ping] = []
        var ingestStatus: Int?
        /// The answer of `GET /features/<app>` (404 while nil).
        var features: JSONValue?
    }

    private let state = Mutex(State())

    init(beiweOnly: Bool = false, key: RSAKey = MemoryStudy.sharedKey, ingestsTelemetry: Bool = false) {
        self.key = key
        state.withLock {
            $0.beiweOnly = beiweOnly
            $0.ingests = ingestsTelemetry
        }
    }

    /// A device's configuration for this study: its server (and its relay, when `relay`), patient `p1` with password
    /// `temp`, Chicago time, no heartbeat, OS version 14; with `telemetry`, pings go to this study uncompressed (the test
    /// reads them), with `features`, feature values come from it. `adjust` sets the rest.
    static func configuration(_ directory: URL = InMemoryFlowTests.directory(), relay: Bool = true, telemetry: Bool = false,
                              features: Bool = false,
                              _ adjust: (inout SurveyClientConfiguration) -> Void = { _ in }) -> SurveyClientConfiguration {
        var configuration = SurveyClientConfiguration(
            serverURL: serverURL, relayURL: relay ? relayURL : nil, storageDirectory: directory, patientID: "p1",
            temporaryPassword: "temp", timeZone: "America/Chicago", heartbeatInterval: nil, osVersion: "14")
        if telemetry {
            configuration.telemetryURL = serverURL
            configuration.gzipTelemetry = false
        }
        if features { configuration.featuresURL = serverURL }
        adjust(&configuration)
        return configuration
    }

    // MARK: What a test sets

    /// Answers every ping with `status` (nil: takes them again).
    func setIngestStatus(_ status: Int?) { state.withLock { $0.ingests = true; $0.ingestStatus = status } }

    /// The pings taken, in order; only those named `name` when given.
    func pings(_ name: String? = nil) -> [Ping] { state.withLock { $0.pings }.filter { name == nil || $0.name == name } }

    /// Serves `GET /features/<app>` with `value` (the mock server's body: `features`, `enrollments`); nil: 404.
    func setFeatures(_ value: JSONValue?) { state.withLock { $0.features = value } }

    /// Registration answers Beiwe's `device_settings` with this survey-check frequency (seconds).
    func setCheckFrequency(_ seconds: Int?) { state.withLock { $0.checkFrequency = seconds } }

    /// Registration answers `scheduling` (`server`, or `device` for an old-style study).
    func setScheduling(_ scheduling: String) { state.withLock { $0.scheduling = scheduling } }

    /// Adds a survey the server serves (with Beiwe's weekly `timings`, for old-style studies).
    func addSurvey(_ id: String, name: String = "Mood", timings: [[Int]] = [[], [], [], [], [], [], []]) {
        let question: JSONValue = ["question_id": "q1", "question_type": "slider", "question_text": "How are you?", "min": "0", "max": "10"]
        let entry = SurveyEntry(id: id, name: name, surveyType: "tracking_survey", content: [question], settings: [:], timings: timings)
        state.withLock { $0.surveys[id] = entry }
    }

    /// Deletes a survey (a push naming it finds it gone).
    func removeSurvey(_ id: String) { _ = state.withLock { $0.surveys.removeValue(forKey: id) } }

    /// The next `count` requests to `path` (e.g. `/download_survey`, `/v1/devices`) answer `status` with an error body
    /// of `code`.
    func fail(_ path: String, status: Int, count: Int = 1, code: String = "fault") {
        state.withLock { $0.faults[path, default: []] += Array(repeating: (status, code), count: count) }
    }

    /// Forgets the faults still queued for `path`.
    func clearFaults(_ path: String) { _ = state.withLock { $0.faults.removeValue(forKey: path) } }

    /// Requests to `path` wait until ``release(_:)``.
    func hold(_ path: String) { _ = state.withLock { $0.held.insert(path) } }

    /// Lets the held requests to `path` (and later ones) go on.
    func release(_ path: String) {
        let waiting = state.withLock { state in
            state.held.remove(path)
            return state.waiting.removeValue(forKey: path) ?? []
        }
        for waiter in waiting { waiter.continuation.resume() }
    }

    /// The relay forgets `token` (as after an uninstall): its open stream ends, and the next one answers 410.
    func forget(_ token: String) {
        let stream = state.withLock { state in
            state.gone.insert(token)
            return state.streams.removeValue(forKey: token)
        }
        stream?.finish()
    }

    /// Sends `data` as a `push` event to `token`'s open stream as it is (an unreadable relay message, say).
    func pushRaw(to token: String, id: String, data: String) {
        deliver(to: token, Message(id: id, data: Array("event: push\nid: \(id)\ndata: \(data)\n\n".utf8)))
    }

    /// Keeps `message` in `token`'s backlog until acked, and writes it to the open stream unless that went silent.
    private func deliver(to token: String, _ message: Message) {
        let stream = state.withLock { state in
            state.backlog[token, default: []].append(message)
            return state.silent.contains(token) ? nil : state.streams[token]
        }
        stream?.yield(message.data)
    }

    /// The relay closes `token`'s open stream (a restart, a load balancer): the device reconnects.
    func drop(_ token: String) {
        let stream = state.withLock { $0.streams.removeValue(forKey: token) }
        stream?.finish()
    }

    /// The open stream of `token` goes silent: it stays open but nothing reaches it (keepalives neither), as a
    /// connection dropped without a FIN. The next stream opened gets the backlog again.
    func silence(_ token: String) { _ = state.withLock { $0.silent.insert(token) } }

    /// Sends a survey push to `token` (delivered now when its stream is open, else on its next open, until acked).
    func push(to token: String, id: String, surveys: [String: [String]], nonce: String = UUID().uuidString) {
        let push = SurveyPush(surveyIDs: surveys.keys.sorted(), sentTime: "2026-05-04T14:00:00", nonce: nonce, surveyUUIDs: surveys)
        let payload = JSONValue.object(push.dataFields().mapValues { .string($0) })
        let message = RelayWire.Message(id: id, payload: payload, priority: 10, collapseID: nil, pushType: nil, sentAt: 0)
        let json = try! WireJSON.encodeString(message)
        deliver(to: token, Message(id: id, data: Array("event: push\nid: \(id)\ndata: \(json)\n\n".utf8)))
    }

    // MARK: What a test reads

    /// Every request so far, in order.
    var seen: [Seen] { state.withLock { $0.seen } }

    /// The requests to `path` so far.
    func seen(_ path: String) -> [Seen] { seen.filter { $0.path == path } }

    /// Tokens minted so far, in order.
    var mintedTokens: [String] { state.withLock { state in (0..<state.minted).map { Self.token($0) } } }

    /// Tokens with a stream open now.
    var openStreams: Set<String> { state.withLock { Set($0.streams.keys) } }

    /// Messages sent to `token` and not acked.
    func unacked(_ token: String) -> [String] { state.withLock { ($0.backlog[token] ?? []).map(\.id) } }

    /// How long a wait for a condition may take. Generous: `swift test` runs these suites in one process with every other
    /// suite, and a CPU-heavy synchronous test can hold both of a two-core machine's cooperative threads for seconds (a
    /// 5 s wait failed in a CI-like run behind a 9 s property test, since made fast). A condition that holds ends the
    /// wait at once.
    static let patience: Duration = .seconds(30)

    /// Waits (up to `timeout`) until `condition` holds; false when it did not.
    func until(_ timeout: Duration = MemoryStudy.patience, _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    /// Waits (up to ``patience``) until the asynchronous `condition` holds (a client's state, read through its actor).
    static func eventually(_ condition: () async -> Bool) async -> Bool {
        let end = ContinuousClock.now + patience
        while ContinuousClock.now < end {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await condition()
    }

    // MARK: HTTPTransport

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let (path, form) = Self.parse(request)
        let sentPath = URL(string: request.url)?.path ?? request.url
        let fileName = Self.multipart(request)?.parts.first { $0.name == "file" }?.filename
        state.withLock {
            $0.seen.append(Seen(method: request.method, path: path, form: form, headers: request.headers, body: request.body ?? [],
                                sentPath: sentPath, fileName: fileName))
        }
        await waitIfHeld(path)
        if Task.isCancelled { throw TransportError(code: "cancelled", message: "cancelled") }
        if let fault = state.withLock({ $0.faults[path]?.isEmpty == false ? $0.faults[path]!.removeFirst() : nil }) {
            return Self.json(fault.status, ["error": ["code": .string(fault.code), "message": "injected"]])
        }
        return answer(path: path, form: form, request: request)
    }

    func eventStream(_ request: TransportRequest) async throws(TransportError) -> TransportClient.EventStream {
        let (path, _) = Self.parse(request)
        state.withLock { $0.seen.append(Seen(method: request.method, path: path, form: [:], headers: request.headers)) }
        await waitIfHeld(path)
        if Task.isCancelled { throw TransportError(code: "cancelled", message: "cancelled") }
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count == 4, parts[0] == "v1", parts[1] == "devices", parts[3] == "stream" else {
            return TransportClient.EventStream(status: 404, chunks: AsyncThrowingStream { $0.finish() })
        }
        let token = parts[2]
        if let fault = state.withLock({ $0.faults[path]?.isEmpty == false ? $0.faults[path]!.removeFirst() : nil }) {
            return TransportClient.EventStream(status: fault.status, chunks: AsyncThrowingStream { $0.finish() })
        }
        let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let backlog: [Message]? = state.withLock { state in
            guard !state.gone.contains(token), token.hasPrefix("tok-") else { return nil }
            state.streams[token]?.finish()
            state.streams[token] = continuation
            state.silent.remove(token)
            return state.backlog[token] ?? []
        }
        guard let backlog else {
            return TransportClient.EventStream(status: 410, chunks: AsyncThrowingStream { $0.finish() })
        }
        for message in backlog { continuation.yield(message.data) }
        return TransportClient.EventStream(status: 200, chunks: chunks, onCancel: { [weak self] in
            self?.state.withLock { state in
                if state.streams[token] != nil { state.streams[token] = nil }
            }
        })
    }

    // MARK: Routes

    private func answer(path: String, form: [String: String], request: TransportRequest) -> TransportResponse {
        let parts = path.split(separator: "/").map(String.init)
        if parts == ["v1", "devices"] {
            let token = state.withLock { state in
                defer { state.minted += 1 }
                return Self.token(state.minted)
            }
            return Self.json(201, ["token": .string(token)])
        }
        if parts.count == 4, parts[0] == "v1", parts[1] == "devices", parts[3] == "ack" {
            let ids = (try? WireJSON.decode(RelayWire.AckRequest.self, from: Data(request.body ?? [])))?.ids ?? []
            state.withLock { $0.backlog[parts[2]]?.removeAll { ids.contains($0.id) } }
            return Self.json(200, [:])
        }
        let beiweOnly = state.withLock { $0.beiweOnly }
        switch path {
        case "/register_user":
            let scheduling = state.withLock { $0.scheduling }
            var body: [String: JSONValue] = ["client_public_key": .string(Data(key.publicKeyDER()).base64EncodedString()),
                                             "study_id": "study-1", "timezone": "America/Chicago"]
            if !beiweOnly { body["scheduling"] = .string(scheduling) }
            if let frequency = state.withLock({ $0.checkFrequency }) {
                body["device_settings"] = ["check_for_new_surveys_frequency_seconds": .number(Double(frequency))]
            }
            return Self.json(200, .object(body))
        case "/set_fcm_token", "/mobile-heartbeat":
            return TransportResponse(status: 200, headers: [], body: [])
        case "/confirm_notifications", "/download_survey":
            if beiweOnly { return Self.beiwe404 }
            if path == "/confirm_notifications" { return TransportResponse(status: 200, headers: [], body: []) }
            guard let entry = state.withLock({ $0.surveys[form["survey_id"] ?? ""] }) else {
                return Self.json(404, ["error": ["code": "survey_not_found", "message": "no such survey"]])
            }
            var served = entry
            served.timings = nil
            return TransportResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(try! WireJSON.encode(served)))
        case "/download_surveys":
            let list = state.withLock { $0.surveys.values.sorted { $0.id < $1.id } }
            return TransportResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(try! WireJSON.encode(list)))
        case "/upload":
            return TransportResponse(status: 200, headers: [], body: Array("upload successful.".utf8))
        case _ where path.hasPrefix("/features/"):
            guard let features = state.withLock({ $0.features }) else { return Self.beiwe404 }
            return Self.json(200, features)
        case _ where path.hasPrefix("/submit/") && state.withLock({ $0.ingests }):
            if let status = state.withLock({ $0.ingestStatus }) {
                return Self.json(status, ["error": ["code": "fault", "message": "injected"]])
            }
            let parts = path.split(separator: "/").map(String.init)  // submit, app, ping, version, id
            let gzip = request.headers.contains { $0.name.lowercased() == "content-encoding" }
            let body = gzip ? JSONValue.null : (try? WireJSON.decode(JSONValue.self, from: Data(request.body ?? []))) ?? .null
            state.withLock { $0.pings.append(Ping(name: parts.count > 2 ? parts[2] : "", documentID: parts.last ?? "", body: body)) }
            return TransportResponse(status: 200, headers: [], body: [])
        default:
            return Self.beiwe404
        }
    }

    /// The answers to `/upload`, decrypted with the study's key: `question id → answer` per file.
    func uploadedAnswers() throws -> [[String: String]] {
        try seen("/upload").map { upload in
            let decrypted = try BeiweFile.decrypt(upload.form["file"] ?? "", privateKey: key)
            var answers: [String: String] = [:]
            for line in decrypted.lines.dropFirst() {
                let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                if let id = fields.first, let answer = fields.last { answers[id] = answer }
            }
            return answers
        }
    }

    // MARK: Helpers

    /// Waits while `path` is held; a cancelled caller stops waiting at once, as a network transfer is aborted.
    private func waitIfHeld(_ path: String) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let held = state.withLock { state in
                    guard state.held.contains(path), !Task.isCancelled else { return false }
                    state.waiting[path, default: []].append((id, continuation))
                    return true
                }
                if !held { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiting[path]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting[path]?.remove(at: index).continuation
            }
            waiting?.resume()
        }
    }

    static func token(_ n: Int) -> String { "tok-\(n + 1)" }

    static let beiwe404 = TransportResponse(status: 404, headers: [("Content-Type", "text/html")],
                                            body: Array("<html><head><title>404 Not Found</title></head><body>Not Found</body></html>".utf8))

    static func json(_ status: Int, _ value: JSONValue) -> TransportResponse {
        TransportResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(value.compactText.utf8))
    }

    /// The path (server and relay alike, `/ios` suffix dropped) and the form fields of a request.
    static func parse(_ request: TransportRequest) -> (String, [String: String]) {
        var path = URL(string: request.url)?.path ?? request.url
        if path.hasSuffix("/ios") { path = String(path.dropLast(4)) }
        var form: [String: String] = [:]
        if let body = request.body, request.headers.contains(where: { $0.value.hasPrefix("application/x-www-form-urlencoded") }) {
            for field in FormBody(parsingBytes: body).fields { form[field.name] = field.value }
        } else if let multipart = multipart(request) {
            for part in multipart.parts { form[part.name] = String(decoding: part.body, as: UTF8.self) }
        }
        return (path, form)
    }

    /// The parts of a multipart body (iOS uploads), nil for any other body.
    static func multipart(_ request: TransportRequest) -> MultipartForm? {
        guard let body = request.body, let type = request.headers.first(where: { $0.name.lowercased() == "content-type" })?.value,
              let boundary = MultipartForm.boundary(fromContentType: type) else { return nil }
        return try? MultipartForm(parsing: body, boundary: boundary)
    }
}
