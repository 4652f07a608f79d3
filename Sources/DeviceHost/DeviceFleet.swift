import ClientSDK
import Foundation
import Logging
import SurveyWire
import Transport

/// Many simulated devices in one process (`survey-cli devices serve`), sharing one transport, each in its own directory
/// under `dataDirectory` and each an SDK client: the state a test in any language reads and drives over HTTP
/// (``DeviceRoutes``) instead of a process and its stdout per device.
public actor DeviceFleet {
    /// Devices kept at most, whatever the descriptor limit.
    public static let maxDevices = 10_000

    /// Devices this fleet keeps at most: ``maxDevices``, or fewer when the process's descriptor limit allows fewer
    /// (``DescriptorBudget``). A create past it is refused (409 `too_many_devices`), never a failure later.
    public let capacity: Int

    /// A refusal: the API's status and stable code.
    public struct Failure: Error, Sendable {
        /// The HTTP status the API answers with.
        public var status: Int
        /// The stable error code (`device_not_found`, `invalid_credentials`, ...).
        public var code: String
        /// What went wrong, for a person.
        public var message: String
    }

    let serverURL: String
    let relayURL: String?
    let dataDirectory: URL
    private let connections: SharedConnections
    private let logger: Logger
    private var devices: [String: HostedDevice] = [:]
    private var order: [String] = []

    /// - Parameters:
    ///   - serverURL: the study server every device registers with.
    ///   - relayURL: the push relay (nil: devices schedule surveys themselves and poll `/download_surveys`).
    ///   - dataDirectory: where each device's directory is made (`<device_id>/`).
    ///   - capacity: devices kept at most (default ``maxDevices``; `survey-cli devices serve` gives what its descriptor
    ///     limit allows).
    public init(serverURL: String, relayURL: String?, dataDirectory: URL, logger: Logger = Logger(label: "survey-devices"),
                capacity: Int = DeviceFleet.maxDevices) {
        self.capacity = min(max(0, capacity), Self.maxDevices)
        self.serverURL = serverURL
        self.relayURL = relayURL
        self.dataDirectory = dataDirectory
        self.logger = logger
        connections = SharedConnections()
    }

    /// Registers a new device and starts it listening; returns its view.
    public func create(_ request: DeviceWire.Create) async throws(Failure) -> JSONValue {
        try Self.validate(request)
        guard devices.count < capacity else {
            let why = capacity < Self.maxDevices ? " (its descriptor limit allows \(capacity): \(DescriptorBudget.perDevice) a device)" : ""
            throw Failure(status: 409, code: "too_many_devices", message: "this process holds \(capacity) devices at most\(why); delete some")
        }
        let id = Self.newID()
        let directory = dataDirectory.appendingPathComponent(id)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(status: 500, code: "storage", message: "cannot make \(directory.path): \(error)")
        }
        var configuration = SurveyClientConfiguration(
            serverURL: serverURL, relayURL: relayURL, storageDirectory: directory, patientID: request.patientID,
            temporaryPassword: request.password, platform: request.platform == "ios" ? .ios : .android, timeZone: request.timezone,
            telemetryURL: request.telemetryURL, featuresURL: request.featuresURL)
        if let osVersion = request.osVersion { configuration.osVersion = osVersion }
        let device = HostedDevice(id: id, request: request, configuration: configuration, connections: connections, logger: logger)
        do {
            try await device.start()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw Self.failure(error)
        }
        devices[id] = device
        order.append(id)
        return try await view(device)
    }

    /// Every device's view, oldest first.
    public func list() async throws(Failure) -> [JSONValue] {
        var views: [JSONValue] = []
        for id in order {
            guard let device = devices[id] else { continue }
            views.append(try await view(device))
        }
        return views
    }

    /// One device's view.
    public func view(_ id: String) async throws(Failure) -> JSONValue {
        try await view(try device(id))
    }

    /// Closes a device and deletes its directory.
    public func delete(_ id: String) async throws(Failure) {
        let device = try device(id)
        devices[id] = nil
        order.removeAll { $0 == id }
        // Its waits end now; a start under way finishes first, then the device stops (DeviceLifecycle).
        await device.delete()
        try? FileManager.default.removeItem(at: dataDirectory.appendingPathComponent(id))
    }

    /// Stops a device (its client closed, its directory kept); returns its view.
    public func stop(_ id: String) async throws(Failure) -> JSONValue {
        let device = try device(id)
        await device.stop()
        return try await view(device)
    }

    /// Starts a stopped device again; returns its view.
    public func start(_ id: String) async throws(Failure) -> JSONValue {
        let device = try device(id)
        do { try await device.start() } catch { throw Self.failure(error) }
        return try await view(device)
    }

    /// A device's events after `after`, waiting up to `wait` for one (or for one named `until`).
    public func events(_ id: String, after: Int, until: String?, wait: Duration) async throws(Failure) -> DeviceWire.Events {
        if let until, !DeviceEventLine.names.contains(until) {
            throw Failure(status: 400, code: "invalid_field",
                          message: "until must name an event (\(DeviceEventLine.names.sorted().joined(separator: ", ")))")
        }
        let device = try device(id)
        let page = await device.events(after: after, until: until, wait: wait)
        return DeviceWire.Events(events: page.events, next: page.next)
    }

    /// Answers a stored survey of a device; returns once the server took the upload.
    public func answer(_ id: String, _ body: DeviceWire.Answers) async throws(Failure) {
        let device = try device(id)
        do { try await device.submit(body) } catch { throw Self.failure(error) }
    }

    /// Stops every device (their directories stay).
    public func shutdown() async {
        for device in devices.values { await device.stop() }
        connections.shutdown()
    }

    // MARK: Helpers

    private func device(_ id: String) throws(Failure) -> HostedDevice {
        guard let device = devices[id] else { throw Failure(status: 404, code: "device_not_found", message: "no device has the id '\(id)'") }
        return device
    }

    private func view(_ device: HostedDevice) async throws(Failure) -> JSONValue {
        do { return try await device.view() } catch { throw Self.failure(error) }
    }

    static func validate(_ request: DeviceWire.Create) throws(Failure) {
        func bad(_ field: String, _ message: String) -> Failure { Failure(status: 400, code: "invalid_field", message: "\(field): \(message)") }
        guard !request.patientID.isEmpty, request.patientID.count <= 64 else { throw bad("patient_id", "1-64 characters") }
        guard !request.password.isEmpty, request.password.count <= 256 else { throw bad("password", "1-256 characters") }
        guard TimeZone(identifier: request.timezone) != nil else { throw bad("timezone", "'\(request.timezone)' is not a tz database name") }
        if let platform = request.platform, platform != "android", platform != "ios" { throw bad("platform", "android or ios") }
        if let os = request.osVersion, os.isEmpty || os.count > 16 { throw bad("os_version", "1-16 characters (Beiwe's column)") }
        for (field, url) in [("telemetry_url", request.telemetryURL), ("features_url", request.featuresURL)] {
            if let url, !(url.hasPrefix("http://") || url.hasPrefix("https://")) { throw bad(field, "an http:// or https:// URL") }
        }
        if let value = request.answerValue, value.count > 1000 { throw bad("answer_value", "at most 1000 characters") }
    }

    /// The HTTP status an SDK error answers with.
    static func failure(_ error: SurveyClientError) -> Failure {
        let status: Int
        switch error.code {
        case "survey_not_found": status = 404
        case "invalid_credentials": status = 403
        case "submission_pending", "not_registered", "closed", "device_stopped", "storage_locked": status = 409
        case "push_token_required", "bad_push": status = 400
        default: status = 502
        }
        return Failure(status: status, code: error.code, message: error.message)
    }

    static func newID() -> String {
        "dev-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
    }
}
