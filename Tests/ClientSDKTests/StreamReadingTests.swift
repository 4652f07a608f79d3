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

    @Test func aSilentStreamIsDeadAfterItsLimitButKeepalivesKeepItAlive() async throws {
        let (items, continuation) = Self.stream()
        let started = ContinuousClock.now
        // Keepalives every 50 ms for 300 ms, then silence: dead about 150 ms after the last.
        let feeder = Task {
            for _ in 0..<6 {
                continuation.yield(Array(": keepalive\n\n".utf8))
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        let end = try await SurveyClient.consume(items, deadAfter: .milliseconds(150)) { _ in }
        let took = ContinuousClock.now - started
        #expect(end == .dead)
        #expect(took >= .milliseconds(400), "declared dead after \(took) while keepalives came")
        feeder.cancel()
        continuation.finish()
    }

    @Test func handlingLongerThanTheLimitIsNotSilence() async throws {
        let (items, continuation) = Self.stream()
        continuation.yield(Array("event: push\ndata: slow\n\n".utf8))
        let handled = Mutex(0)
        let reading = Task {
            try await SurveyClient.consume(items, deadAfter: .milliseconds(100)) { _ in
                try? await Task.sleep(for: .milliseconds(300))
                handled.withLock { $0 += 1 }
            }
        }
        try await Task.sleep(for: .milliseconds(350))
        #expect(handled.withLock { $0 } == 1)
        continuation.finish()
        #expect(try await reading.value == .closed)
    }

    @Test func theTickRunsBesideTheReadingAndEndsWithIt() async throws {
        let (items, continuation) = Self.stream()
        let ticks = Mutex(0)
        let reading = Task {
            try await SurveyClient.consume(items, deadAfter: .seconds(5), handle: { _ in },
                                           tick: { ticks.withLock { $0 += 1 }; return .milliseconds(10) })
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(ticks.withLock { $0 } >= 3)
        continuation.finish()
        _ = try await reading.value
        let after = ticks.withLock { $0 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(ticks.withLock { $0 } == after)
    }

    @Test func aWatchIsSilentOnlyWhenIdlePastTheLimit() async throws {
        let watch = StreamWatch()
        #expect(!watch.isSilent(for: .milliseconds(20)))
        try await Task.sleep(for: .milliseconds(40))
        #expect(watch.isSilent(for: .milliseconds(20)))
        watch.busy(true)
        try await Task.sleep(for: .milliseconds(40))
        #expect(!watch.isSilent(for: .milliseconds(20)))
        watch.busy(false)
        #expect(!watch.isSilent(for: .milliseconds(20)))
        watch.touch()
        #expect(!watch.isSilent(for: .milliseconds(20)))
    }
}
