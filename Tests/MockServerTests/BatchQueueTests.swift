import Testing
@testable import MockServer

/// The store batchers' queue, transition by transition.
@Suite struct BatchQueueTests {
    @Test func theFirstJobStartsADrainAndTheOthersJoinIt() {
        var queue = BatchQueue<Int>()
        let starts = [queue.add(1), queue.add(2), queue.add(3)]
        #expect(starts == [true, false, false])
        #expect(queue.draining)
        #expect(queue.pending == [1, 2, 3])
    }

    @Test func aBatchTakesAtMostItsBoundInArrivalOrder() {
        var queue = BatchQueue<Int>()
        for job in 1...5 { _ = queue.add(job) }
        let batches = [queue.next(max: 2), queue.next(max: 2), queue.next(max: 2)]
        #expect(batches == [[1, 2], [3, 4], [5]])
        #expect(queue.draining)
    }

    @Test func anEmptyBatchEndsTheDrainAndTheNextJobStartsAnother() {
        var queue = BatchQueue<Int>()
        _ = queue.add(1)
        let first = queue.next(max: 8)
        let second = queue.next(max: 8)
        #expect(first == [1])
        #expect(second.isEmpty)
        #expect(!queue.draining)
        let starts = queue.add(2)
        #expect(starts)
    }

    @Test func jobsAddedWhileABatchRunsGoIntoTheNext() {
        var queue = BatchQueue<Int>()
        _ = queue.add(1)
        let first = queue.next(max: 8)
        let starts = queue.add(2)  // the drain is still running: it will take this one
        let second = queue.next(max: 8)
        #expect(first == [1])
        #expect(!starts)
        #expect(second == [2])
    }

    @Test func itCountsTheJobsAndBatchesItHandsOut() {
        var queue = BatchQueue<Int>()
        for job in 1...5 { _ = queue.add(job) }
        _ = queue.next(max: 3)
        _ = queue.next(max: 3)
        _ = queue.next(max: 3)  // empty: ends the drain, counts nothing
        #expect(queue.taken.jobs == 5)
        #expect(queue.taken.batches == 2)
    }
}
