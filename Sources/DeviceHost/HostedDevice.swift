import ClientSDK
import Foundation
import Logging
import ServerSupport
import SurveyWire
import Transport

/// One simulated device of a ``DeviceFleet``: an SDK client in its own directory, its numbered events, and, when asked,
/// an answer to every survey as soon as it is available. Stopped, it holds no client (its directory is free).
actor HostedDevice {
    /// `running` or `stopped` (a device starting or stopping shows as running until it has stopped).
    enum State: String, Sendable {
        case running
        case stopped
    }

    let id: String
    let request: DeviceWire.Create
    let configuration: SurveyClientConfiguration
    private let connections: SharedConnections
    private let logger: Logger
    private var lifecycle = DeviceLifecycle()
    /// Moves whenever the lifecycle's phase does: what a request waiting for other work, and an events wait, watch.
    let phaseChanges = ObservedValue<UInt64>(0)
    private var client: SurveyClient?
    /// What the client held when it last stopped: a stopped device's view (its directory does not change while no
    /// client has it). Two views of a stopped device used to open two readers of its directory at once, and the second
    /// met the first's lock (409 `storage_locked`).
    private var lastStatus: SurveyClientStatus?
    private var consumer: Task<Void, Never>?
    private var log = DeviceEventLog()
    /// The newest `seq`: what a waiting reader watches.
    let newest = ObservedValue<Int>(0)

    var state: State { lifecycle.phase == .stopped || lifecycle.phase == .deleted ? .stopped : .running }
    var isDeleted: Bool { lifecycle.phase == .deleted }

    init(id: String, request: DeviceWire.Create, configuration: SurveyClientConfiguration, connections: SharedConnections, logger: Logger) {
        self.id = id
        self.request = request
        self.configuration = configuration
        self.connections = connections
        self.logger = logger
    }

    /// Opens its directory and starts the client (registering the first time); waits for a stop under way first.
    /// Throws what the SDK threw (the device is stopped then), or `device_not_found` once deleted.
    func start() async throws(SurveyClientError) {
        while true {
            switch lifecycle.startAsked() {
            case .none: return
            case .refuse: throw Self.gone(id)
            case .wait, .stop: await settle()
            case .start:
                phaseChanged()
                do {
                    try await startClient()
                } catch {
                    _ = lifecycle.started(false)
                    phaseChanged()
                    throw error
                }
                if lifecycle.started(true) == .stop {
                    phaseChanged()
                    await stopClient()
                }
                phaseChanged()
                return
            }
        }
    }

    /// Closes the client (its directory is free); the events stay readable. A stop asked for while the device starts
    /// takes effect once the start ends, and returns then.
    func stop() async {
        while true {
            switch lifecycle.stopAsked() {
            case .none, .refuse, .start: return
            case .wait:
                await settle()
                if lifecycle.phase == .stopped || lifecycle.phase == .deleted { return }
            case .stop:
                phaseChanged()
                await stopClient()
                return
            }
        }
    }

    /// Stops the device and marks it gone: later requests are refused and waits on its events end.
    func delete() async {
        while true {
            switch lifecycle.deleteAsked() {
            case .none, .refuse, .start:
                phaseChanged()
                return
            case .wait:
                await settle()
                if lifecycle.phase == .deleted { return }
            case .stop:
                phaseChanged()
                await stopClient()
                return
            }
        }
    }

    /// Waits until the lifecycle's phase moves (the work under way ended).
    private func settle() async {
        let seen = phaseChanges.value
        _ = await phaseChanges.wait(until: { $0 != seen }, timeout: .seconds(60))
    }

    private func phaseChanged() {
        phaseChanges.update { $0 += 1 }
    }

    private func startClient() async throws(SurveyClientError) {
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
        if let answer {
            for survey in await client.pendingSurveys() {
                try? await client.submit(answers: survey.answers(allWith: answer), for: survey.surveyID)
            }
        }
    }

    /// Closes the client and reports the stop to the lifecycle.
    private func stopClient() async {
        if let client {
            self.client = nil
            lastStatus = await client.status()
            await client.close()
            await consumer?.value
            consumer = nil
        }
        lifecycle.stopped()
        phaseChanged()
    }

    static func gone(_ id: String) -> SurveyClientError {
        SurveyClientError(code: "device_not_found", message: "device \(id) was deleted")
    }

    /// What the device holds (`docs/schemas/device-status.schema.json`) with its id, participant, platform and state.
    func view() async throws(SurveyClientError) -> JSONValue {
        // A client starting or stopping holds the directory: read it once that work has ended.
        while lifecycle.phase == .starting || lifecycle.phase == .stopping { await settle() }
        let status: SurveyClientStatus
        if let client {
            status = await client.status()
        } else if let lastStatus {
            status = lastStatus
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

    /// The events after `after` (up to the first `until`), once there is one (or that one), or when `wait` is over;
    /// a wait ends early when the device stops or is deleted (it adds no events then).
    nonisolated func events(after: Int, until: String?, wait: Duration) async -> DeviceEventLog.Page {
        let deadline = ContinuousClock.now + wait
        while true {
            let seen = newest.value, seenPhase = phaseChanges.value
            let (page, ended) = await page(after: after, until: until)
            if page.satisfied || ended || ContinuousClock.now >= deadline || Task.isCancelled { return page }
            // Whichever moves first: a new event, or the device's phase (a stop or delete ends the wait).
            await withTaskGroup(of: Void.self) { group in
                let timeout = deadline - ContinuousClock.now
                group.addTask { _ = await self.newest.wait(until: { $0 != seen }, timeout: timeout) }
                group.addTask { _ = await self.phaseChanges.wait(until: { $0 != seenPhase }, timeout: timeout) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    private func page(after: Int, until: String?) -> (DeviceEventLog.Page, ended: Bool) {
        (log.page(after: after, until: until), lifecycle.endsWaits)
    }

    private func record(_ event: SurveyClientEvent) {
        log.append(DeviceEventLine.object(event))
        let seq = log.lastSeq
        newest.update { $0 = seq }
    }
}
