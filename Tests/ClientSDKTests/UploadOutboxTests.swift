import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

@Suite struct UploadOutboxTests {
    @Test func oneUploadPerFileAtATime() {
        var outbox = UploadOutbox()
        let first = outbox.begin("a.csv")
        let again = outbox.begin("a.csv")
        let other = outbox.begin("b.csv")
        #expect(first && other)
        #expect(!again, "the retry loop must not POST a file submit is uploading")
        outbox.end("a.csv")
        let afterEnd = outbox.begin("a.csv")
        #expect(afterEnd)
    }
}
