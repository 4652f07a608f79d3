import Testing
@testable import TrioLoad

/// The open model's pacing, start by start: no clock, no sleep.
@Suite struct ArrivalsTests {
    func offsets(_ schedule: RateSchedule, total: Double) -> [Arrivals.Arrival] {
        var arrivals = Arrivals(schedule: schedule, total: total)
        var result: [Arrivals.Arrival] = []
        while let next = arrivals.next() { result.append(next) }
        return result
    }

    func close(_ a: [Double], _ b: [Double]) -> Bool { a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) < 1e-9 } }

    @Test func aConstantRateSpacesStartsEvenlyAndStopsAtTheEnd() {
        let all = offsets(RateSchedule(constant: 4), total: 1)
        #expect(all.map(\.index) == [0, 1, 2, 3])
        #expect(close(all.map(\.offset), [0, 0.25, 0.5, 0.75]))
        let fast = offsets(RateSchedule(constant: 2000), total: 1)
        #expect(fast.count == 2000)
        #expect(abs(fast[1].offset - 0.0005) < 1e-12)
    }

    @Test func nothingIsDueAtOrAfterTheEnd() {
        #expect(offsets(RateSchedule(constant: 10), total: 0).isEmpty)
        #expect(close(offsets(RateSchedule(constant: 1), total: 2.5).map(\.offset), [0, 1, 2]))
        #expect(offsets(RateSchedule(constant: 0), total: 2).isEmpty)
    }

    @Test func aRampFromZeroStartsAtOnceAndFollowsTheIntegralOfItsRate() throws {
        let all = offsets(try RateSchedule(parsing: "0:0/s,1s:100/s"), total: 2)
        // The old pacing waited 1/rate at the first tiny rate: 100 s at 1/s, so nothing in the run at all.
        #expect(all.first!.offset < 0.2)
        // 50 starts under the ramp's first second (its integral), then 100 a second.
        let firstSecond = all.filter { $0.offset < 1 }.count
        #expect((48...52).contains(firstSecond))
        #expect((148...152).contains(all.count))
        let gaps = zip(all, all.dropFirst()).map { $1.offset - $0.offset }
        #expect(gaps.first! > gaps.last!)
        #expect(abs(gaps.last! - 0.01) < 1e-9)
        #expect(all.map(\.index) == Array(0..<all.count))
    }

    @Test func aPauseInTheMiddleHasNoStarts() throws {
        let all = offsets(try RateSchedule(parsing: "0:10/s,1s:10/s,1.001s:0/s,2s:0/s,2.001s:10/s"), total: 3)
        #expect(all.filter { $0.offset > 1.01 && $0.offset < 2 }.isEmpty)
        #expect((18...22).contains(all.count))
    }

    @Test func theInFlightLimitDropsRatherThanQueues() {
        #expect(Arrivals.admits(running: 0, maxInFlight: 1))
        #expect(!Arrivals.admits(running: 1, maxInFlight: 1))
        #expect(!Arrivals.admits(running: 0, maxInFlight: 0))
    }

    @Test func withoutATickEachStartWakesAtItsOwnTime() {
        for offset in [0, 0.0005, 0.00123, 2.5] { #expect(Arrivals.wake(for: offset, tick: 0) == offset) }
    }

    @Test func aTickWakesOnceForEveryStartDueWithinIt() {
        let tick = 0.001
        // 2,000 starts a second: two per 1 ms tick, each sent at the end of the tick it falls in.
        let starts = offsets(RateSchedule(constant: 2000), total: 0.01).map(\.offset)
        let wakes = starts.map { Arrivals.wake(for: $0, tick: tick) }
        // 20 starts (0, 0.5 ms, … 9.5 ms) wake at 11 ticks: the first at 0, then two at each of 1 ms … 10 ms.
        #expect(starts.count == 20)
        #expect(Set(wakes.map { ($0 * 1e6).rounded() }).count == 11)
        for (start, wake) in zip(starts, wakes) {
            #expect(wake >= start - 1e-9)
            #expect(wake - start < tick)
        }
        // Every other start is due on a tick's end and goes out then, though its offset is a sum of 0.5 ms steps (ten of
        // them read 5.000000000000001 ms).
        for (index, start) in starts.enumerated() where index % 2 == 0 {
            #expect(abs(Arrivals.wake(for: start, tick: tick) - start) < 1e-9, "start \(index) due at \(start) s")
        }
        // A start due exactly on a tick goes out then, not a tick later.
        #expect(abs(Arrivals.wake(for: 0.001, tick: tick) - 0.001) < 1e-12)
        #expect(abs(Arrivals.wake(for: 0.003, tick: tick) - 0.003) < 1e-12)
        #expect(abs(Arrivals.wake(for: 0.0031, tick: tick) - 0.004) < 1e-12)
        #expect(Arrivals.wake(for: 0, tick: tick) == 0)
    }

    @Test func aPacingTickIsZeroOrADurationUpToOneSecond() throws {
        #expect(try parsePacingTick("0") == .zero)
        #expect(try parsePacingTick("1ms") == .milliseconds(1))
        #expect(try parsePacingTick("500us") == .microseconds(500))
        #expect(throws: LoadUsageError.self) { try parsePacingTick("2s") }
        #expect(throws: LoadUsageError.self) { try parsePacingTick("fast") }
    }
}
