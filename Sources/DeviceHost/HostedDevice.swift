import ClientSDK
import Foundation
import Logging
import ServerSupport
import SurveyWire
import Transport

/// One simulated device of a ``DeviceFleet``: an SDK client in its own directory, its numbered events, and, when asked,
/// an answer to every survey as soon as it is available. Stopped, it holds no client (its directory is free).
actor HostedDevice {
    /// `running` or `stopped`.
    enum State: String, Sendable {
        case running
        case stopped
    }

    let id: String
    let request: DeviceWire.Create
    let configuration: SurveyClientConfiguration
    private let connections: SharedConnections
    private let logger: Logger
    private(set) var state: State = .stopped
    private var client: SurveyClient?
    private var consumer: Task<Void, Never>?
    private var log = DeviceEventLog()
    /// The newest `seq`: what a waiting reader watches.
    let newest = ObservedValue<Int>(0)

    init(id: String, request: DeviceWire.Create, configuration: SurveyClientConfiguration, connections: SharedConnections, logger: Logger) {
        self.id = id
        self.request = request
        self.configuration = configuration
        self.connections = connections
        self.logger = logger
    }

    /// Opens its directory and starts the client (registering the first time). Throws what the SDK threw; the device
    /// is stopped then.
    func start() async throws(SurveyClientError) {
        guard state == .stopped else { return }
        let client = try SurveyClient(configuration: configuration, connections: connections, logger: logger)
        let answer = request.autoAnswer == true ? (request.answerValue ?? "1") : nil
        consumer = Task { [weak self] in
            for await event in client.events {
                await self?.record(event)
                if let answer, case .surveyAvailable(let survey) = event {
                    // Off the event loop: an upload waits for the server.
                    Task { try? await client.submit(answers: survey.answers(allWith: answer), for: survey.surveyID) }
                }
            }
        }
        do {
            try await client.start()
        } catch {
            await client.close()
            await consumer?.value
            consumer = nil
            throw error
        }
        self.client = client
        state = .running
        if let answer {
            for survey in await client.pendingSurveys() {
                try? await client.submit(answers: survey.answers(allWith: answer), for: survey.surveyID)
            }
        }
    }

    /// Closes the client (its directory is free); the events stay readable.
    func stop() async {
        guard let client else { return }
        self.client = nil
        state = .stopped
        await client.close()
        await consumer?.value
        consumer = nil
    }

    /// What the device holds (`docs/schemas/device-status.schema.json`) with its id, participant, platform and state.
    func view() async throws(SurveyClientError) -> JSONValue {
        let status: SurveyClientStatus
        if let client {
            status = await client.status()
        } else {
            // Stopped: the directory is read by a client of its own for the moment.
            let reader = try SurveyClient(configuration: configuration, connections: connections, logger: logger)
            status = await reader.status()
            await reader.close()
        }
        var object = (try? JSONParser.parse([UInt8](WireJSON.encode(status))))?.objectValue ?? [:]
        object["device_id"] = .string(id)
        object["patient_id"] = .string(request.patientID)
        object["platform"] = .string(configuration.platform == .ios ? "ios" : "android")
        object["state"] = .string(state.rawValue)
        return .object(object)
    }

    /// Answers a stored survey; returns once the server took the upload.
    func submit(_ body: DeviceWire.Answers) async throws(SurveyClientError) {
        guard let client else { throw SurveyClientError(code: "device_stopped", message: "device \(id) is stopped; start it first") }
        try await client.submit(answers: body.answers, for: body.surveyID)
    }

    /// The events after `after` (up to the first `until`), once there is one (or that one), or when `wait` is over.
    nonisolated func events(after: Int, until: String?, wait: Duration) async -> DeviceEventLog.Page {
        let deadline = ContinuousClock.now + wait
        while true {
            let seen = newest.value
            let page = await page(after: after, until: until)
            if page.satisfied || ContinuousClock.now >= deadline || Task.isCancelled { return page }
            _ = await newest.wait(until: { $0 != seen }, timeout: deadline - ContinuousClock.now)
        }
    }

    private func page(after: Int, until: String?) -> DeviceEventLog.Page { log.page(after: after, until: until) }

    private func record(_ event: SurveyClientEvent) {
        log.append(DeviceEventLine.object(event))
        let seq = log.lastSeq
        newest.update { $0 = seq }
    }
}
