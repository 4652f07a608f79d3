import Synchronization
import Testing
@testable import ClientSDK

/// ``OneShot``: a wait returns once the signal fired, whether it fired before or after the wait began, for every waiter.
@Suite struct OneShotTests {
    /// Waiters that got through.
    final class Through: Sendable {
        let count = Mutex(0)
    }

    @Test func aWaitAfterTheFireReturnsAtOnce() async {
        let signal = OneShot()
        #expect(!signal.isFired)
        signal.fire()
        #expect(signal.isFired)
        await signal.wait()
        signal.fire()  // a second fire changes nothing
        await signal.wait()
    }

    @Test func everyWaiterResumesAtTheFire() async {
        let signal = OneShot()
        let through = Through()
        await withTaskGroup(of: Int.self) { group in
            for n in 0..<5 {
                group.addTask {
                    await signal.wait()
                    through.count.withLock { $0 += 1 }
                    return n
                }
            }
            // No waiter gets through before the fire, given time to.
            try? await Task.sleep(for: .milliseconds(50))
            #expect(through.count.withLock { $0 } == 0)
            signal.fire()
            var returned: [Int] = []
            for await n in group { returned.append(n) }
            #expect(returned.sorted() == [0, 1, 2, 3, 4])
        }
    }

    @Test func aFireFromACancellationHandlerEndsTheWait() async {
        let signal = OneShot()
        let waiter = Task {
            await withTaskCancellationHandler { await signal.wait() } onCancel: { signal.fire() }
        }
        waiter.cancel()
        await waiter.value
        #expect(signal.isFired)
    }
}
