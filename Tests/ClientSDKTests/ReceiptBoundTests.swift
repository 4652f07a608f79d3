import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

@Suite struct ReceiptBoundTests {
    @Test func receiptsWaitingAreBounded() {
        var state = ClientState(deviceID: "d", passwordHash: "h", clientID: "c")
        state.addReceipts((0..<(ClientState.receiptLimit + 50)).map { "u\($0)" })
        state.addReceipts(["u100"])  // already waiting: not added twice
        #expect(state.pendingReceipts?.count == ClientState.receiptLimit)
        #expect(state.pendingReceipts?.first == "u50", "the oldest go first")
    }
}
