import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// ``FeatureValues``: the SDK's own view of the server's feature answer, fetched, merged over the app's defaults, and
/// kept on disk in the wire format.
@Suite struct FeatureValuesTests {
    static let answer: JSONValue = [
        "features": ["onboarding": ["title": "Hi", "cards": ["a", "b"]]],
        "enrollments": [["slug": "new-title", "branch": "treatment", "feature_id": "onboarding"]],
    ]

    @Test func theWireAnswerBecomesValuesAndEnrollments() throws {
        let wire = try WireJSON.decode(AdminWire.Features.self, from: WireJSON.encode(Self.answer))
        let values = FeatureValues(wire)
        #expect(values.values["onboarding"]?["title"] == "Hi")
        #expect(values.enrollments == [FeatureValues.Enrollment(slug: "new-title", branch: "treatment", featureID: "onboarding")])
        #expect(values.branch(of: "new-title") == "treatment" && values.branch(of: "other") == nil)
    }

    @Test func fetchedValuesMergeOverDefaultsAndServeFromDiskWhenOffline() async throws {
        let study = MemoryStudy()
        let directory = InMemoryFlowTests.directory()
        func client() throws -> SurveyClient {
            try SurveyClient(configuration: MemoryStudy.configuration(directory, relay: false, features: true), transport: study)
        }
        let first = try client()
        // Nothing fetched yet: the defaults alone.
        #expect(await first.features == nil)
        #expect(await first.featureValue("onboarding", defaults: ["title": "Hello", "dismissable": true]) == ["title": "Hello", "dismissable": true])
        // The server has no features route: an error, and the defaults still serve.
        await #expect(throws: SurveyClientError.self) { try await first.refreshFeatures() }
        study.setFeatures(Self.answer)
        let fetched = try await first.refreshFeatures()
        #expect(fetched.branch(of: "new-title") == "treatment")
        #expect(await first.featureValue("onboarding", defaults: ["title": "Hello", "dismissable": true])
                == ["title": "Hi", "dismissable": true, "cards": ["a", "b"]])
        await first.close()
        // A later client on the directory, offline: the last good copy.
        study.setFeatures(["features": [:], "enrollments": []])
        let again = try client()
        #expect(await again.features == fetched)
        await again.close()
        await #expect(throws: SurveyClientError.self) { try await again.refreshFeatures() }
    }
}
