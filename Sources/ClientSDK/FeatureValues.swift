import SurveyWire

/// The feature values a client was given (`GET /features/<app_id>`, kept as the last good copy): each feature's value
/// for this client (its rollout merged with the client's experiment branch) and the experiments it is enrolled in.
public struct FeatureValues: Sendable, Equatable {
    /// One experiment the client is enrolled in.
    public struct Enrollment: Sendable, Equatable {
        /// The experiment's slug.
        public var slug: String
        /// The branch the client was bucketed into.
        public var branch: String
        /// The feature the experiment configures.
        public var featureID: String

        /// Creates the value from its fields.
        public init(slug: String, branch: String, featureID: String) {
            self.slug = slug
            self.branch = branch
            self.featureID = featureID
        }
    }

    /// Each feature's value by feature id (`messaging`, ...), as served. Read through
    /// ``SurveyClient/featureValue(_:defaults:)``, which merges it over the app's defaults into the app's own type.
    var values: [String: JSONValue]
    /// The experiments the client is enrolled in.
    public var enrollments: [Enrollment]

    /// The ids of the features the server gave a value, sorted.
    public var featureIDs: [String] { values.keys.sorted() }

    /// The value of the wire type (which is also what is kept on disk, unchanged).
    init(_ wire: AdminWire.Features) {
        values = wire.features
        enrollments = wire.enrollments.map { Enrollment(slug: $0.slug, branch: $0.branch, featureID: $0.featureID) }
    }

    /// The branch of the experiment `slug`, if enrolled.
    public func branch(of slug: String) -> String? { enrollments.first { $0.slug == slug }?.branch }
}
