import Testing
@testable import ClientSDK

/// ``StreamResumePoint``: the `Last-Event-ID` the push stream resumes at, kept by the client across stream loops.
@Suite struct StreamResumePointTests {
    @Test func theFirstConnectHasNoResumePoint() {
        #expect(StreamResumePoint().lastEventID == nil)
    }

    @Test func itIsTheLastPushHandledUnlessOneFailedSince() {
        var point = StreamResumePoint()
        point.handled("m1")
        point.handled("m2")
        #expect(point.lastEventID == "m2")
        // m3's fetch failed: without a resume point the relay sends the unacked m3 again.
        point.failed()
        point.handled("m4")
        #expect(point.lastEventID == nil)
        // Connected again: the relay resent what was unacked, so resuming is allowed again.
        point.connected()
        #expect(point.lastEventID == "m4")
    }

    @Test func aConnectBeforeAnyFailureChangesNothing() {
        var point = StreamResumePoint()
        point.handled("m1")
        point.connected()
        #expect(point.lastEventID == "m1")
        point.connected()
        #expect(point.lastEventID == "m1")
    }
}
