import Synchronization
import Testing
@testable import ClientSDK

/// ``ClientRuntime``: who drives the loops (the caller of `run()`, or an owner task made on the first message), halts
/// by kind, shutdown, and a loop that holds its client only during a call.
@Suite struct ClientRuntimeTests {
    /// Stands for the client: counts ticks.
    final class Ticker: Sendable {
        let ticks = Mutex(0)
        func tick() -> Duration? {
            ticks.withLock { $0 += 1 }
            return .milliseconds(2)
        }
        var count: Int { ticks.withLock { $0 } }
    }

    /// A runtime whose heartbeat and batch loops tick `ticker` (held weakly, as the client is).
    static func runtime(ticking ticker: Ticker) -> ClientRuntime {
        let runtime = ClientRuntime()
        let held = WeakReference(ticker)
        runtime.install { kind in
            switch kind {
            case .heartbeat: await MachineLoop.periodic(runtime.heartbeat) { _ in held.object?.tick() }
            case .localSchedule: await MachineLoop.periodic(runtime.localSchedule) { _ in held.object?.tick() }
            default: await MachineLoop.single(runtime.batch) {}
            }
        }
        return runtime
    }

    @Test func theFirstMessageMakesTheOwnerTaskAndShutdownEndsIt() async throws {
        let ticker = Ticker()
        let runtime = Self.runtime(ticking: ticker)
        try await Task.sleep(for: .milliseconds(20))
        #expect(ticker.count == 0)
        runtime.heartbeat.send(.begin(firstWait: .zero))
        #expect(await MemoryStudy.eventually { ticker.count >= 3 })
        // Only the kind sent a message has a loop.
        #expect(runtime.heartbeat.hasLoop)
        #expect(!runtime.localSchedule.hasLoop && !runtime.outboxRetry.hasLoop)
        runtime.shutdown()
        // Work already running ends; nothing ticks afterwards.
        try await Task.sleep(for: .milliseconds(30))
        let after = ticker.count
        try await Task.sleep(for: .milliseconds(50))
        #expect(ticker.count == after)
        runtime.heartbeat.send(.begin(firstWait: .zero))
        await runtime.halt([.heartbeat])
        #expect(!runtime.claim(), "a runtime shut down is driven by nobody")
    }

    @Test func drivenByACallerTheLoopsAreItsChildrenAndEndWhenItIsCancelled() async {
        let ticker = Ticker()
        let runtime = Self.runtime(ticking: ticker)
        #expect(runtime.claim())
        #expect(!runtime.claim())
        let driver = Task { await runtime.drive() }
        runtime.heartbeat.send(.begin(firstWait: .zero))
        runtime.localSchedule.send(.begin(firstWait: .zero))
        #expect(await MemoryStudy.eventually { ticker.count >= 4 })
        driver.cancel()
        // drive() returns only after every loop and its work ended: structured.
        await driver.value
        let after = ticker.count
        try? await Task.sleep(for: .milliseconds(30))
        #expect(ticker.count == after)
        // Later messages are dropped and halts return.
        runtime.heartbeat.send(.begin(firstWait: .zero))
        await runtime.halt(Set(ClientRuntime.Kind.allCases))
        #expect(ticker.count == after)
    }

    @Test func aHaltOfSomeKindsLeavesTheOthersRunning() async {
        let ticker = Ticker()
        let runtime = Self.runtime(ticking: ticker)
        runtime.heartbeat.send(.begin(firstWait: .zero))
        runtime.localSchedule.send(.begin(firstWait: .seconds(60)))
        #expect(await MemoryStudy.eventually { ticker.count >= 2 })
        await runtime.halt([.localSchedule, .stream])
        #expect(runtime.localSchedule.isIdle)
        #expect(!runtime.heartbeat.isIdle)
        let before = ticker.count
        #expect(await MemoryStudy.eventually { ticker.count > before + 2 }, "the heartbeat stopped with the schedule")
        await runtime.halt([.heartbeat])
        #expect(runtime.heartbeat.isIdle)
        runtime.shutdown()
    }

    @Test func aLoopHoldsItsClientOnlyDuringACall() async {
        var ticker: Ticker? = Ticker()
        weak let weakTicker = ticker
        let runtime = Self.runtime(ticking: ticker!)
        runtime.heartbeat.send(.begin(firstWait: .zero))
        #expect(await MemoryStudy.eventually { (weakTicker?.count ?? 0) >= 2 })
        ticker = nil
        // Freed between two ticks; the next tick finds it gone and the loop comes to rest.
        #expect(await MemoryStudy.eventually { runtime.heartbeat.isIdle })
        #expect(weakTicker == nil)
        runtime.shutdown()
    }
}
