import Foundation
import Synchronization
import Testing
import Transport
@testable import ClientSDK

/// ``SurveyClient/consume(_:deadAfter:handle:tick:)``: reading a push stream until it closes or goes silent, with the
/// retry tick beside it, and ``StreamWatch``.
@Suite struct StreamReadingTests {

    static func stream() -> (EventItems, AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        return (TransportClient.EventStream(status: 200, chunks: chunks).items, continuation)
    }

    @Test func eventsAreHandledInOrderUntilTheStreamCloses() async throws {
        let (items, continuation) = Self.stream()
        let handled = Mutex<[String]>([])
        continuation.yield(Array("event: push\nid: 1\ndata: a\n\n: keepalive\n\nevent: push\nid: 2\ndata: b\n\n".utf8))
        continuation.finish()
        let end = try await SurveyClient.consume(items, deadAfter: .seconds(5)) { event in handled.withLock { $0.append(event.data) } }
        #expect(end == .closed)
        #expect(handled.withLock { $0 } == ["a", "b"])
    }

    /// A stream that stays open and sends nothing is declared dead. (That keepalives hold this off is the watch's
    /// `touch`, tested below without the clock of a loaded machine in the way: a wall-clock test of it failed when the
    /// whole test process was starved.)
    @Test func aSilentStreamIsDeclaredDead() async throws {
        let (items, continuation) = Self.stream()
        continuation.yield(Array(": keepalive\n\n".utf8))
        let end = try await SurveyClient.consume(items, deadAfter: .milliseconds(100)) { _ in }
        #expect(end == .dead)
        continuation.finish()
    }

    @Test func handlingLongerThanTheLimitIsNotSilence() async throws {
        let (items, continuation) = Self.stream()
        // One event whose handling takes 2.5 times the limit, then the end of the stream.
        continuation.yield(Array("event: push\ndata: slow\n\n".utf8))
        continuation.finish()
        let handled = Mutex(0)
        let end = try await SurveyClient.consume(items, deadAfter: .seconds(1)) { _ in
            try? await Task.sleep(for: .milliseconds(2500))
            handled.withLock { $0 += 1 }
        }
        // It ends because the stream closed, not as dead.
        #expect(end == .closed)
        #expect(handled.withLock { $0 } == 1)
    }

    @Test func theTickRunsBesideTheReadingAndEndsWithIt() async throws {
        let (items, continuation) = Self.stream()
        let ticks = Mutex(0)
        let reading = Task {
            try await SurveyClient.consume(items, deadAfter: .seconds(5), handle: { _ in },
                                           tick: { ticks.withLock { $0 += 1 }; return .milliseconds(10) })
        }
        #expect(await MemoryStudy.eventually { ticks.withLock { $0 } >= 3 })
        continuation.finish()
        _ = try await reading.value
        let after = ticks.withLock { $0 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(ticks.withLock { $0 } == after)
    }

    @Test func aWatchIsSilentOnlyWhenIdlePastTheLimit() async throws {
        let watch = StreamWatch()
        #expect(!watch.isSilent(for: .seconds(5)))
        try await Task.sleep(for: .milliseconds(40))
        #expect(watch.isSilent(for: .milliseconds(20)))
        // Busy (an event being handled): never silent, however long.
        watch.busy(true)
        try await Task.sleep(for: .milliseconds(40))
        #expect(!watch.isSilent(for: .milliseconds(20)))
        watch.busy(false)
        try await Task.sleep(for: .milliseconds(40))
        #expect(watch.isSilent(for: .milliseconds(20)))
        // A keepalive (touch) starts the silence over.
        watch.touch()
        #expect(!watch.isSilent(for: .seconds(5)))
    }
}
