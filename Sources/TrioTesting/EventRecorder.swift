import ClientSDK
import Foundation

/// Collects a `SurveyClient`'s events so a test can wait for one with a timeout.
public actor EventRecorder {
    public private(set) var events: [SurveyClientEvent] = []
    private var task: Task<Void, Never>?

    /// Starts reading `client.events` (the recorder becomes its one consumer).
    public init(_ client: SurveyClient) {
        let stream = client.events
        task = nil
        Task { await self.begin(stream) }
    }

    private func begin(_ stream: AsyncStream<SurveyClientEvent>) {
        task = Task { [weak self] in
            for await event in stream { await self?.append(event) }
        }
    }

    private func append(_ event: SurveyClientEvent) { events.append(event) }

    /// A timeout waiting for an event.
    public struct Timeout: Error, CustomStringConvertible {
        /// What was awaited, and for how long.
        public var description: String
    }

    /// Waits until an event after position `from` matches, returning it and its position.
    @discardableResult
    public func wait<T: Sendable>(from start: Int = 0, timeout: Duration = .seconds(10), _ match: @Sendable (SurveyClientEvent) -> T?) async throws -> (T, Int) {
        let deadline = ContinuousClock.now + timeout
        var index = start
        while true {
            while index < events.count {
                if let value = match(events[index]) { return (value, index + 1) }
                index += 1
            }
            guard ContinuousClock.now < deadline else {
                throw Timeout(description: "no matching event within \(timeout); saw \(events)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The next stored-survey event after `start`.
    public func survey(from start: Int = 0, timeout: Duration = .seconds(10)) async throws -> (StoredSurvey, Int) {
        try await wait(from: start, timeout: timeout) { if case .surveyAvailable(let s) = $0 { s } else { nil } }
    }

    /// How many events so far.
    public var count: Int { events.count }
}
