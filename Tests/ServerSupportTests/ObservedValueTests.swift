@testable import ServerSupport
import Testing

/// `ObservedValue`: the graceful stop's wait for no open connection, and the READY line's wait for the TLS port.
@Suite struct ObservedValueTests {
    @Test func aConditionThatHoldsReturnsAtOnce() async {
        let value = ObservedValue(0)
        #expect(await value.wait { $0 == 0 } == 0)
    }

    @Test func anUpdateThatMeetsTheConditionResumesTheWaiter() async {
        let value = ObservedValue(2)
        async let drained = value.wait { $0 == 0 }
        value.update { $0 -= 1 }
        value.update { $0 -= 1 }
        #expect(await drained == 0)
    }

    @Test func aCancelledWaitGetsNil() async {
        let value = ObservedValue<String?>(nil)
        let waiter = Task { await value.wait { $0 != nil } }
        waiter.cancel()
        #expect(await waiter.value == nil)
        // A later update has no waiter left to resume.
        value.update { $0 = "x" }
        #expect(value.value == "x")
    }
}

@Suite struct ObservedValueTimeoutTests {
    @Test func aTimedWaitEndsWithNilWhenNothingChangesAndWithTheValueWhenItDoes() async {
        let value = ObservedValue(0)
        #expect(await value.wait(until: { $0 == 1 }, timeout: .milliseconds(50)) == nil)
        let waiting = Task { await value.wait(until: { $0 == 2 }, timeout: .seconds(60)) }
        try? await Task.sleep(for: .milliseconds(20))
        value.update { $0 = 2 }
        #expect(await waiting.value == 2)
    }
}
