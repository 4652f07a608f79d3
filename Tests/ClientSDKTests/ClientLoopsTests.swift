import Testing
@testable import ClientSDK

/// ``ClientLoops``: one loop of each kind, and what `stop()` takes.
@Suite struct ClientLoopsTests {
    static func job() -> BackgroundJob { BackgroundJob {} }

    @Test func aStartedLoopRunsUntilTakenOrEnded() {
        var loops = ClientLoops()
        #expect(ClientLoops.Kind.allCases.allSatisfy { !loops.isRunning($0) })
        let stream = Self.job()
        loops.started(.stream, stream)
        #expect(loops.isRunning(.stream) && !loops.isRunning(.heartbeat))
        #expect(loops.take(.stream) === stream)
        #expect(!loops.isRunning(.stream))
        #expect(loops.take(.stream) == nil)
    }

    @Test func stopTakesEveryLoopButTheOnesKept() {
        var loops = ClientLoops()
        var jobs: [ClientLoops.Kind: BackgroundJob] = [:]
        for kind in ClientLoops.Kind.allCases {
            jobs[kind] = Self.job()
            loops.started(kind, jobs[kind]!)
        }
        let taken = loops.takeAll(except: [.sessionHeartbeat])
        #expect(taken.count == ClientLoops.Kind.allCases.count - 1)
        #expect(!taken.contains { $0 === jobs[.sessionHeartbeat] })
        #expect(ClientLoops.Kind.allCases.filter(loops.isRunning) == [.sessionHeartbeat])
        #expect(loops.takeAll().count == 1)
        #expect(loops.takeAll().isEmpty)
    }
}
