import Foundation
import Synchronization
import Testing
@testable import ClientSDK

/// ``BackgroundTasks/periodic(on:firstWait:_:)``: the loop shape of the heartbeat, the device's schedule, the session
/// heartbeat and the app-handed pushes' retries.
@Suite struct PeriodicJobTests {
    /// Stands for the client: counts ticks, and says how long to wait next.
    final class Ticker: Sendable {
        let ticks = Mutex(0)
        let waits: Mutex<[Duration?]>
        init(_ waits: [Duration?]) { self.waits = Mutex(waits) }
        func tick() -> Duration? {
            ticks.withLock { $0 += 1 }
            return waits.withLock { $0.isEmpty ? .milliseconds(5) : $0.removeFirst() }
        }
        var count: Int { ticks.withLock { $0 } }
    }


    @Test func itTicksAtOnceThenAfterEachReturnedWaitAndEndsOnNil() async {
        let tasks = BackgroundTasks()
        let ticker = Ticker([.milliseconds(1), .milliseconds(1), nil])
        let job = tasks.periodic(on: ticker, firstWait: .zero) { $0.tick() }
        await job.value
        #expect(ticker.count == 3)
        tasks.shutdown()
    }

    @Test func theFirstTickWaitsForTheFirstWait() async throws {
        let tasks = BackgroundTasks()
        let ticker = Ticker([])
        let job = tasks.periodic(on: ticker, firstWait: .seconds(30)) { $0.tick() }
        try await Task.sleep(for: .milliseconds(100))
        #expect(ticker.count == 0)
        // Cancelled during its wait, it ends at once without ticking.
        job.cancel()
        await job.value
        #expect(ticker.count == 0)
        tasks.shutdown()
    }

    @Test func aDroppedClientEndsTheLoopAndIsFreed() async {
        let tasks = BackgroundTasks()
        var ticker: Ticker? = Ticker([])
        weak let weakTicker = ticker
        let job = tasks.periodic(on: ticker!, firstWait: .zero) { $0.tick() }
        #expect(await MemoryStudy.eventually { (weakTicker?.count ?? 0) >= 2 })
        ticker = nil
        // The loop held the client only during a tick: it is freed, and the loop ends at its next tick.
        await job.value
        #expect(weakTicker == nil)
        tasks.shutdown()
    }

    @Test func shutdownEndsEveryLoop() async {
        let tasks = BackgroundTasks()
        let ticker = Ticker([])
        let jobs = (0..<3).map { _ in tasks.periodic(on: ticker, firstWait: .zero) { $0.tick() } }
        #expect(await MemoryStudy.eventually { ticker.count >= 6 })
        tasks.shutdown()
        for job in jobs { await job.value }
        let after = ticker.count
        try? await Task.sleep(for: .milliseconds(50))
        #expect(ticker.count == after)
    }
}
