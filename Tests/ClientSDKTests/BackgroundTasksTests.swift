import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

/// The client's one task group: jobs cancelled one by one or all together, awaited, and none started after shutdown.
@Suite struct BackgroundTasksTests {
    /// Counts how many jobs are running, and lets a test wait until a job ended.
    final class Probe: Sendable {
        let started = Mutex(0)
        let ended = Mutex(0)
        func job() -> @Sendable () async -> Void {
            { [self] in
                started.withLock { $0 += 1 }
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                ended.withLock { $0 += 1 }
            }
        }
    }

    @Test func aJobCancelledAloneEndsWhileTheOthersRunAndShutdownEndsThemAll() async {
        let tasks = BackgroundTasks()
        let probe = Probe()
        let first = tasks.spawn(probe.job())
        let second = tasks.spawn(probe.job())
        let finishedAlone = Mutex(false)
        let oneShot = tasks.spawn { finishedAlone.withLock { $0 = true } }
        await oneShot.value
        #expect(finishedAlone.withLock { $0 })
        first.cancel()
        await first.value
        #expect(probe.ended.withLock { $0 } == 1)
        #expect(tasks.liveCount == 1)
        tasks.shutdown()
        await second.value
        #expect(probe.ended.withLock { $0 } == 2)
        // After shutdown nothing starts, and awaiting such a job does not hang.
        let late = tasks.spawn(probe.job())
        await late.value
        #expect(probe.started.withLock { $0 } == 2)
    }

    @Test func drivenByACallerTheJobsAreItsChildrenAndEndWhenItIsCancelled() async {
        let tasks = BackgroundTasks()
        let probe = Probe()
        #expect(tasks.claim())
        #expect(!tasks.claim())
        let jobs = (0..<3).map { _ in tasks.spawn(probe.job()) }
        let driver = Task { await tasks.drive() }
        while probe.started.withLock({ $0 }) < 3 { try? await Task.sleep(for: .milliseconds(5)) }
        driver.cancel()
        await driver.value
        // drive() returned only after its children ended: structured.
        #expect(probe.ended.withLock { $0 } == 3)
        for job in jobs { await job.value }
        let late = tasks.spawn(probe.job())
        await late.value
        #expect(probe.started.withLock { $0 } == 3)
    }

    @Test func aJobCancelledBeforeItStartsNeverRuns() async {
        let tasks = BackgroundTasks()
        #expect(tasks.claim())
        let ran = Mutex(false)
        let job = tasks.spawn { ran.withLock { $0 = true } }
        job.cancel()
        let driver = Task { await tasks.drive() }
        await job.value
        tasks.shutdown()
        await driver.value
        #expect(!ran.withLock { $0 })
    }
}
