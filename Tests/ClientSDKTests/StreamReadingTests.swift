import Foundation
import Synchronization
import Testing
import Transport
@testable import ClientSDK

/// ``SurveyClient/consume(_:deadAfter:handle:tick:)``: reading a push stream until it closes or goes silent, with the
/// retry tick beside it, and ``StreamWatch``.
@Suite struct StreamReadingTests {
    /// Polls `condition` for up to 10 s (the whole suite shares two cores: a task may start late).
    static func until(_ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

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
        // Keepalives every 50 ms for 1.5 s, then silence: dead about 1 s after the last (a limit twenty times the gap,
        // so a feeder slowed by a loaded machine does not look silent).
        let feeder = Task {
            for _ in 0..<30 {
                continuation.yield(Array(": keepalive\n\n".utf8))
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        let end = try await SurveyClient.consume(items, deadAfter: .seconds(1)) { _ in }
        let took = ContinuousClock.now - started
        #expect(end == .dead)
        #expect(took >= .milliseconds(1500), "declared dead after \(took) while keepalives came")
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
        #expect(await Self.until { handled.withLock { $0 } == 1 })
        // Still reading after a handling three times the limit: it ends when the stream closes, not as dead.
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
        #expect(await Self.until { ticks.withLock { $0 } >= 3 })
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
        watch.busy(true)
        try await Task.sleep(for: .milliseconds(40))
        #expect(!watch.isSilent(for: .milliseconds(20)))
        watch.busy(false)
        #expect(!watch.isSilent(for: .seconds(5)))
        try await Task.sleep(for: .milliseconds(40))
        #expect(watch.isSilent(for: .milliseconds(30)))
        watch.touch()
        #expect(!watch.isSilent(for: .milliseconds(30)))
    }
}
