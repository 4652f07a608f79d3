import Foundation
import SurveyWire
import Testing
@testable import ClientSDK

/// ``FeatureValues``: the SDK's own view of the server's feature answer, fetched, merged over the app's defaults, and
/// kept on disk in the wire format.
@Suite struct FeatureValuesTests {
    /// An app's own type for the `onboarding` feature.
    struct Onboarding: Codable, Equatable {
        var title: String
        var dismissable: Bool
        var cards: [String]?
    }
    static let defaults = Onboarding(title: "Hello", dismissable: true)

    static let answer: JSONValue = [
        "features": ["onboarding": ["title": "Hi", "cards": ["a", "b"]]],
        "enrollments": [["slug": "new-title", "branch": "treatment", "feature_id": "onboarding"]],
    ]

    @Test func theWireAnswerBecomesValuesAndEnrollments() throws {
        let wire = try WireJSON.decode(AdminWire.Features.self, from: WireJSON.encode(Self.answer))
        let values = FeatureValues(wire)
        #expect(values.values["onboarding"]?["title"] == "Hi" && values.featureIDs == ["onboarding"])
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
        #expect(try await first.featureValue("onboarding", defaults: Self.defaults) == Self.defaults)
        // The server has no features route: an error, and the defaults still serve.
        #expect(await Self.code { try await first.refreshFeatures() } == .featuresFailed)
        study.setFeatures(Self.answer)
        let fetched = try await first.refreshFeatures()
        #expect(fetched.branch(of: "new-title") == "treatment")
        #expect(try await first.featureValue("onboarding", defaults: Self.defaults) == Onboarding(title: "Hi", dismissable: true, cards: ["a", "b"]))
        await first.close()
        // A later client on the directory, offline: the last good copy.
        study.setFeatures(["features": [:], "enrollments": []])
        let again = try client()
        #expect(await again.features == fetched)
        await again.close()
        #expect(await Self.code { try await again.refreshFeatures() } == .closed)
        await #expect(throws: SurveyClientError.closed) { try await again.featureValue("onboarding", defaults: Self.defaults) }
    }

    /// The code `call` threw, or nil.
    static func code(_ call: () async throws -> Void) async -> SurveyClientError.Code? {
        do { try await call() } catch { return (error as? SurveyClientError)?.kind }
        return nil
    }

    @Test func withoutAFeaturesURLTheDefaultsServeAndRefreshingSaysWhy() async throws {
        let client = try SurveyClient(configuration: MemoryStudy.configuration(InMemoryFlowTests.directory(), relay: false, features: false),
                                      transport: MemoryStudy())
        #expect(await Self.code { try await client.refreshFeatures() } == .featuresUnavailable)
        #expect(try await client.featureValue("onboarding", defaults: Self.defaults) == Self.defaults)
        await client.close()
    }

    @Test func aServedValueOfAnotherTypeIsAnErrorWithItsCode() async throws {
        let study = MemoryStudy()
        study.setFeatures(["features": ["onboarding": ["title": 42]], "enrollments": []])
        let client = try SurveyClient(configuration: MemoryStudy.configuration(InMemoryFlowTests.directory(), relay: false, features: true),
                                      transport: study)
        _ = try await client.refreshFeatures()
        do {
            _ = try await client.featureValue("onboarding", defaults: Self.defaults)
            Issue.record("a number for a String field was read")
        } catch {
            #expect(error.kind == .featureInvalid)
        }
        // A feature the server did not serve: the defaults.
        #expect(try await client.featureValue("other", defaults: Self.defaults) == Self.defaults)
        await client.close()
    }
}
