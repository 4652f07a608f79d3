import ServerSupport
import SurveyWire
import Testing

/// The one spelling of a path that the guards, the intercepts and the router all see (`ServerSupport.RequestTarget`).
@Suite struct RequestTargetTests {
    private func canonical(_ uri: String) -> String? {
        if case .success(let value) = RequestTarget.canonical(uri) { return value }
        return nil
    }

    private func refusal(_ uri: String) -> RequestTarget.Refusal? {
        if case .failure(let refusal) = RequestTarget.canonical(uri) { return refusal }
        return nil
    }

    @Test func canonicalPathsAreKeptAsTheyAre() {
        for uri in ["/", "/__admin/info", "/register_user/ios", "/v1/projects/p/messages:send", "/__admin/requests?path=//x&limit=2",
                    "/a.b/c..d/.e", "/%41dmin"] {
            #expect(canonical(uri) == uri, "\(uri)")
        }
    }

    @Test func repeatedAndTrailingSlashesCollapse() {
        #expect(canonical("//__admin/info") == "/__admin/info")
        #expect(canonical("/__admin//reset") == "/__admin/reset")
        #expect(canonical("///__control///health///") == "/__control/health")
        #expect(canonical("/metrics/") == "/metrics")
        #expect(canonical("//") == "/")
        // The query is not a path: its slashes stay.
        #expect(canonical("//__admin/requests/?path=//a/") == "/__admin/requests?path=//a/")
    }

    @Test func dotSegmentsAreRefused() {
        for uri in ["/./__admin/info", "/x/../__admin/info", "/__admin/info/.", "/__admin/..", "/.", "/.."] {
            #expect(refusal(uri) == .dotSegment, "\(uri)")
        }
    }

    @Test func backslashesAreRefused() {
        for uri in ["/\\__admin/info", "/__admin\\info", "/x\\"] {
            #expect(refusal(uri) == .backslash, "\(uri)")
        }
    }

    /// HTTP/2 carries `:path` as raw bytes, where HTTP/1.1's parser refuses anything outside visible ASCII: the one
    /// front door refuses them on both. `?` then U+0353 (a combining mark) is one `Character`, so a path split on
    /// `Character`s carried the query into the path (the fuzzer's find, `Fuzz/corpus/target/crash-combining-question-mark`).
    @Test func bytesOutsideVisibleASCIIAreRefused() {
        for uri in ["/s/?\u{0353}a//b", "/__control/\u{0353}stats", "/a b", "/a\u{7F}", "/a\u{00}", "/x?a=\u{E9}", "/x?a=b c",
                    "/x?\t", "/caf\u{E9}"] {
            #expect(refusal(uri) == .invalidByte, "\(uri.debugDescription)")
        }
        #expect(canonical("/x?a=%E9&b=~!$'()*+,;:@") == "/x?a=%E9&b=~!$'()*+,;:@")
        #expect(RequestPath.path(of: "/s/?\u{0353}a//b") == "/s/")
        #expect(RequestPath.path(of: "/s/a") == "/s/a")
    }

    /// Neither the router nor the guards decode a path: an encoded character is text to both, so it is kept (a
    /// participant id may hold `%5C`; `%2F__admin` is one segment, a 404).
    @Test func percentEncodingIsKeptAsText() {
        for uri in ["/%2F__admin/info", "/__admin/participants/%5D%06S%C3%B5%5C", "/%2e%2e/x", "/a%20b", "/a%2"] {
            #expect(canonical(uri) == uri, "\(uri)")
        }
    }

    @Test func targetsThatAreNotPathsAreRefused() {
        for uri in ["*", "http://127.0.0.1/__admin/info", "__admin/info", ""] {
            #expect(refusal(uri) == .notOriginForm, "\(uri)")
        }
    }

    @Test func theRefusalIsA400WithAStableCode() {
        let error = RequestTarget.error(.dotSegment)
        #expect(error.status.code == 400)
        #expect(error.code == "invalid_path")
    }
}
