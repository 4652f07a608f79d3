import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

@Suite struct RelayLinkTests {
    @Test func aTokenCountsAsKnownOnlyOnceTheServerAcceptedThatToken() {
        var link = RelayLink()
        #expect(!link.needsAnnouncement(registered: true))
        link.obtained("t1")
        #expect(!link.serverKnows)
        #expect(!link.needsAnnouncement(registered: false), "nothing to tell before registration")
        #expect(link.needsAnnouncement(registered: true))
        link.serverAccepted("t1")
        #expect(link.serverKnows && !link.needsAnnouncement(registered: true))
    }

    /// Registration sent t1; the relay rotated to t2 while it was in flight. The server holds t1: t2 must be announced.
    @Test func aRotationDuringRegistrationLeavesTheNewTokenToAnnounce() {
        var link = RelayLink()
        link.obtained("t1")
        let sent = link.token!
        link.obtained("t2")
        link.serverAccepted(sent)
        #expect(link.token == "t2" && !link.serverKnows && link.needsAnnouncement(registered: true))
    }

    /// A crash between saving a new token and telling the server: what was saved says the server lacks it.
    @Test func aCrashBetweenSavingAndTellingIsFinishedAtTheNextStart() throws {
        var state = ClientState(deviceID: "d", passwordHash: "h", clientID: "c")
        state.registered = true
        state.link.obtained("t1")
        state.link.serverAccepted("t1")
        state.link.obtained("t2")
        let saved = try JSONEncoder().encode(state)
        let restored = try JSONDecoder().decode(ClientState.self, from: saved)
        #expect(restored.relayToken == "t2" && restored.announcedToken == "t1")
        #expect(restored.link.needsAnnouncement(registered: restored.registered))
    }
}
