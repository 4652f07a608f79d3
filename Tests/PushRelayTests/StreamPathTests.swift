import Testing
@testable import PushRelay

/// Which request paths the connection handler serves as event streams itself.
@Suite struct StreamPathTests {
    @Test(arguments: [
        ("/v1/devices/abc/stream", "abc"),
        ("/v1/devices/abc/stream?x=1", "abc"),
        ("/v1/devices/inst:APA91bXYZ/stream", "inst:APA91bXYZ"),
        ("/v1/devices/a%3Ab/stream", "a%3Ab"),
    ])
    func streamPathsGiveTheirToken(_ uri: String, _ token: String) {
        #expect(RelayConnection.streamToken(uri) == token)
    }

    @Test(arguments: ["/v1/devices//stream", "/v1/devices/stream", "/v1/devices/a/b/stream", "/v1/devices/abc/streams",
                      "/v1/devices/abc", "/v2/devices/abc/stream", "/v1/devices/abc/stream/", "/__control/health", "", "?/v1/devices/a/stream"])
    func otherPathsAreNotStreams(_ uri: String) {
        #expect(RelayConnection.streamToken(uri) == nil)
    }
}
