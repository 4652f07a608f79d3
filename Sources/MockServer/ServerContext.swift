import Foundation
import Logging
import ServerSupport

/// What every route of the mock server shares.
struct ServerContext: Sendable {
    let configuration: MockServerConfiguration
    let store: Store
    let scheduler: SchedulerEngine
    let realNow: @Sendable () -> Date
    let bound: BoundAddress
    let metrics: ServerMetrics
    let keys = KeyCache()
    let faults = FaultTable()
    let logger: Logger
}
