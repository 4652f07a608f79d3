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
}
