import Foundation
import HTTPTypes
import Hummingbird
import ServerSupport
import SurveyWire

/// FCM v1 as firebase-admin and Google's other Admin SDKs call it (PROTOCOL.md §3 and §8): `messages:send` with the
/// whole `Message`, the OAuth2 token endpoint their credentials post to, and topic subscriptions (the v1 route and the
/// Instance ID batch routes). Each refusal is FCM's own error body.
struct FCMRoutes {
    let hub: RelayHub
    let configuration: RelayConfiguration
    let auth: FCMAuth

    static let fourWeeksMillis: Int64 = 28 * 86400 * 1000

    func add(to router: Router<BasicRequestContext>) {
        router.post("/v1/projects/{project}/messages:send") { request, context in try await send(request, context) }
        router.post("/token") { request, _ in try await token(request) }
        router.post("/v1/projects/{project}/registrations/{token}/topicSubscriptions") { request, context in
            try await subscription(request, context, subscribe: true)
        }
        router.delete("/v1/projects/{project}/registrations/{token}/topicSubscriptions/{topic}") { request, context in
            try await subscription(request, context, subscribe: false)
        }
        router.post("/iid/v1:batchAdd") { request, _ in try await batch(request, subscribe: true) }
        router.post("/iid/v1:batchRemove") { request, _ in try await batch(request, subscribe: false) }
    }

    // MARK: Errors and credentials

    static func error(_ status: HTTPResponse.Status, _ statusName: String, _ errorCode: String?, _ message: String) -> RawJSONError {
        var headers = HTTPFields()
        // FCM asks for a wait before a retry of a 429 or a 503.
        if status == .tooManyRequests || status == .serviceUnavailable { headers[.retryAfter] = "1" }
        return RawJSONError(status, body: RelayWire.FCMError(code: Int(status.code), message: message, status: statusName, errorCode: errorCode),
                            headers: headers)
    }

    static func invalid(_ message: String) -> RawJSONError {
        error(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument: " + message)
    }

    static var unixNow: Int64 { Int64(Date().timeIntervalSince1970) }

    static let invalidCredentials = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

    /// Refuses a request whose credentials `--provider-auth` does not accept (Google's 401 bodies; an expired token's
    /// names `ACCESS_TOKEN_EXPIRED` in a `google.rpc.ErrorInfo`, the reason Google's client libraries refresh on), and,
    /// given `project`, a token of another project's service account (403 `PERMISSION_DENIED`, FCM's `ErrorCode`
    /// table). Access tokens expire on the relay clock.
    func checkCredentials(_ request: Request, project: String? = nil) async throws {
        let relayNow = hub.now() / 1000
        switch auth.check(authorization: request.headers[.authorization], now: relayNow) {
        case .valid(let owner):
            guard let project, owner != project else { return }
            throw RawJSONError(.forbidden, body: RelayWire.FCMError(
                code: 403, message: "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).",
                status: "PERMISSION_DENIED", details: [.init(errorInfo: "IAM_PERMISSION_DENIED")]))
        case .absent where configuration.providerAuth == .lenient:
            return
        case .absent:
            throw Self.error(.unauthorized, "UNAUTHENTICATED", nil,
                             "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.")
        case .expired:
            throw RawJSONError(.unauthorized, body: RelayWire.FCMError(code: 401, message: Self.invalidCredentials, status: "UNAUTHENTICATED",
                                                                       details: [.init(errorInfo: "ACCESS_TOKEN_EXPIRED")]))
        case .invalid:
            throw Self.error(.unauthorized, "UNAUTHENTICATED", nil, Self.invalidCredentials)
        }
    }

    // MARK: messages:send

    /// Who a message goes to.
    enum Target {
        case token(String)
        case condition(TopicCondition)
    }

    static func target(_ message: RelayWire.FCMSendRequest.Message) throws -> Target {
        let given = [message.token, message.topic, message.condition, message.fid].compactMap { $0 }
        guard given.count == 1 else {
            throw invalid(given.isEmpty ? "message must have exactly one of token, topic, condition or fid"
                                        : "message must have only one of token, topic, condition or fid")
        }
        if let token = message.token ?? message.fid {
            guard !token.isEmpty else { throw invalid("The registration token is not a valid FCM registration token") }
            return .token(token)
        }
        if let topic = message.topic {
            guard let name = FCMTopic.name(topic) else { throw invalid("Invalid topic name \(topic)") }
            return .condition(.topic(name))
        }
        do {
            return .condition(try TopicCondition(message.condition ?? ""))
        } catch {
            throw invalid("Invalid condition expression provided: \(error.reason)")
        }
    }

    func send(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let project = try context.parameters.require("project")
        try await checkCredentials(request, project: project)
        let body: [UInt8]
        do {
            body = try await request.collectBody(limit: configuration.maxProviderBodyBytes)
        } catch let error as APIError where error.status == .contentTooLarge {
            throw Self.invalid("message is too big")
        }
        let send: RelayWire.FCMSendRequest
        do {
            send = try WireJSON.decode(RelayWire.FCMSendRequest.self, from: body, fast: RelayWire.FCMSendRequest.init(json:))
        } catch {
            throw Self.error(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid JSON payload received: \(error)")
        }
        let message = send.message
        let target = try Self.target(message)
        for (field, data) in [("message.data", message.data), ("message.android.data", message.android?.data)] {
            if let key = data?.keys.sorted().first(where: FCMTables.isReservedDataKey) {
                throw Self.invalid("Invalid data payload key: \(key) (\(field)): from, message_type and keys starting google. or gcm. are reserved")
            }
        }
        if case .token(let token) = target { RequestJournal.current?.token = token }
        let android: FCMDelivery, apple: FCMDelivery
        do {
            android = try FCMDelivery.android(message)
            apple = try FCMDelivery.apple(message)
        } catch {
            throw Self.error(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at '\(error.field)' (\(error.value))")
        }
        // The size of what a device receives, as JSON (FCM's 4,096-byte limit on a message's payload).
        let size = max(android.payload.compactBytes.count, apple.payload.compactBytes.count)
        guard size <= configuration.maxAPNsPayloadBytes else {
            throw Self.invalid("message is too big (\(size) bytes of payload, limit \(configuration.maxAPNsPayloadBytes))")
        }
        let now = hub.now()
        let id = "0:\(now)%" + RandomHex.make(16)
        var relayMessage = RelayMessage(
            id: id, payload: android.payload, priority: android.priority, collapseID: android.collapseID, pushType: android.pushType,
            sentAt: now, expiresAt: now + (android.ttlSeconds.map { Int64($0 * 1000) } ?? Self.fourWeeksMillis), phase: .stored)
        relayMessage.forApple = RelayMessage.Variant(
            payload: apple.payload, priority: apple.priority, collapseID: apple.collapseID, pushType: apple.pushType,
            expiresAt: apple.expiration.map { $0 == 0 ? now : $0 * 1000 } ?? now + Self.fourWeeksMillis)
        let validateOnly = send.validateOnly ?? false
        let outcome: RelayHub.SendOutcome
        switch target {
        case .token(let token):
            outcome = await hub.send(token: token, platformRequired: nil, message: relayMessage, validateOnly: validateOnly)
        case .condition(let condition):
            outcome = await hub.send(matching: condition, message: relayMessage, validateOnly: validateOnly)
        }
        switch outcome {
        case .accepted:
            // A dry run's name is FCM's: `projects/{project}/messages/fake_message_id`.
            let name = validateOnly ? "projects/\(project)/messages/fake_message_id" : "projects/\(project)/messages/\(id)"
            // `FCMSendResponse`'s one field, written without a `JSONEncoder` (the hot path).
            return JSONResponse.make(data: Data(JSONValue.object(["name": .string(name)]).compactBytes))
        case .unknownToken, .wrongPlatform, .topicMismatch:
            throw Self.invalid("The registration token is not a valid FCM registration token")
        case .unregistered:
            throw Self.error(.notFound, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")
        case .rateLimited:
            throw Self.error(.tooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for sending messages to this device.")
        case .outage(let status):
            let (name, code) = switch status {
            case 429: ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
            case 500: ("INTERNAL", "INTERNAL")
            default: ("UNAVAILABLE", "UNAVAILABLE")
            }
            throw Self.error(HTTPResponse.Status(code: status), name, code, "The service is currently unavailable (fault injection).")
        }
    }

    // MARK: The token endpoint

    /// Google's token endpoint for a service account's JWT-bearer grant.
    func token(_ request: Request) async throws -> Response {
        let form = FormBody(parsingBytes: try await request.collectBody(limit: 64 * 1024))
        do {
            let issued = try auth.exchange(grantType: form["grant_type"], assertion: form["assertion"], now: Self.unixNow,
                                           relayNow: hub.now() / 1000, lenient: configuration.providerAuth == .lenient)
            return JSONResponse.make(data: Data(JSONValue.object([
                "access_token": .string(issued.token), "expires_in": .number(Double(issued.expiresIn)), "token_type": "Bearer",
            ]).compactBytes))
        } catch {
            let body = JSONValue.object(["error": .string(error.error), "error_description": .string(error.description)])
            throw RawJSONError(.badRequest, body: body)
        }
    }

    // MARK: Topics

    /// `POST .../registrations/{token}/topicSubscriptions?topic_name=T` and `DELETE .../topicSubscriptions/{topic}`.
    func subscription(_ request: Request, _ context: BasicRequestContext, subscribe: Bool) async throws -> Response {
        let project = try context.parameters.require("project")
        // firebase-admin percent-encodes the token in the path (an FCM-shaped token has a `:`).
        let given = try context.parameters.require("token")
        let token = given.removingPercentEncoding ?? given
        try await checkCredentials(request)
        RequestJournal.current?.token = token
        let named = subscribe ? request.uri.queryParameters["topic_name"].map(String.init) : context.parameters.get("topic")
        guard let named, let topic = FCMTopic.name(named.removingPercentEncoding ?? named) else {
            throw Self.invalid("Invalid topic name \(named ?? "(none)")")
        }
        let known = subscribe ? await hub.subscribe(token: token, topic: topic) : await hub.unsubscribe(token: token, topic: topic)
        guard known else { throw Self.error(.notFound, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.") }
        if !subscribe { return JSONResponse.make(data: Data("{}".utf8)) }
        return JSONResponse.make(data: Data(JSONValue.object([
            "name": .string("projects/\(project)/registrations/\(token)/topicSubscriptions/\(topic)"),
        ]).compactBytes))
    }

    /// The Instance ID batch routes: `{"to": "/topics/T", "registration_tokens": [...]}` → one result per token.
    func batch(_ request: Request, subscribe: Bool) async throws -> Response {
        try await checkCredentials(request)
        let body = try await request.collectBody(limit: configuration.maxProviderBodyBytes)
        guard case .object(let top)? = try? JSONParser.parse(body), case .string(let to)? = top["to"],
              case .array(let values)? = top["registration_tokens"], !values.isEmpty, values.count <= 1000 else {
            throw RawJSONError(.badRequest, body: JSONValue.object(["error": "InvalidParameters: 'to' and 1-1000 'registration_tokens' are required"]))
        }
        guard let topic = FCMTopic.name(to) else {
            throw RawJSONError(.badRequest, body: JSONValue.object(["error": .string("InvalidParameters: invalid topic \(to)")]))
        }
        let tokens = values.compactMap { value -> String? in
            if case .string(let token) = value { return token } else { return nil }
        }
        guard tokens.count == values.count else {
            throw RawJSONError(.badRequest, body: JSONValue.object(["error": "InvalidParameters: registration_tokens must be strings"]))
        }
        var results: [JSONValue] = []
        for token in tokens {
            guard !token.isEmpty else {
                results.append(.object(["error": "INVALID_ARGUMENT"]))
                continue
            }
            let known = subscribe ? await hub.subscribe(token: token, topic: topic) : await hub.unsubscribe(token: token, topic: topic)
            results.append(known ? .object([:]) : .object(["error": "NOT_FOUND"]))
        }
        return JSONResponse.make(data: Data(JSONValue.object(["results": .array(results)]).compactBytes))
    }
}
