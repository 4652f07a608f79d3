import SurveyWire

/// Nimbus feature configuration merging (reference §3): RFC 7396 "patch over fallback" — objects merge per field
/// (and so maps per key, their object values recursively), a `null` in the patch deletes the key, lists and scalars
/// are replaced whole.
public enum FeatureMerge {
    /// `patch` applied over `base`.
    public static func merge(_ base: JSONValue, _ patch: JSONValue) -> JSONValue {
        guard case .object(let patchObject) = patch else { return patch }
        var result: [String: JSONValue]
        if case .object(let baseObject) = base { result = baseObject } else { result = [:] }
        for (key, value) in patchObject {
            if value == .null {
                result.removeValue(forKey: key)
            } else if let existing = result[key] {
                result[key] = merge(existing, value)
            } else {
                result[key] = merge(.null, value)
            }
        }
        return .object(result)
    }

    /// Layers lowest first (app defaults, rollout, experiment branch), merged in order.
    public static func layered(_ layers: [JSONValue]) -> JSONValue {
        layers.dropFirst().reduce(layers.first ?? .object([:])) { merge($0, $1) }
    }

    /// Every occurrence of `{experiment}` in the strings (and object keys) of a branch value replaced by the slug, as
    /// Nimbus does before merging (so keys like `"{experiment}-en"` work).
    public static func replacingExperiment(_ value: JSONValue, slug: String) -> JSONValue {
        switch value {
        case .string(let s): return .string(s.replacingOccurrences(of: "{experiment}", with: slug))
        case .array(let items): return .array(items.map { replacingExperiment($0, slug: slug) })
        case .object(let object):
            var out: [String: JSONValue] = [:]
            for (k, v) in object { out[k.replacingOccurrences(of: "{experiment}", with: slug)] = replacingExperiment(v, slug: slug) }
            return .object(out)
        default: return value
        }
    }
}

/// One feature as the server configures it (`PUT /__admin/features/{app}/{feature}`): a rollout value and an
/// experiment whose branches split clients by ratio.
public struct FeatureConfiguration: Sendable, Equatable, Codable {
    public struct Branch: Sendable, Equatable, Codable {
        public var slug: String
        public var ratio: Int
        public var value: JSONValue
        public init(slug: String, ratio: Int, value: JSONValue) {
            self.slug = slug
            self.ratio = ratio
            self.value = value
        }
    }

    public struct Experiment: Sendable, Equatable, Codable {
        public var slug: String
        public var branches: [Branch]
        public init(slug: String, branches: [Branch]) {
            self.slug = slug
            self.branches = branches
        }
    }

    public var rollout: JSONValue?
    public var experiment: Experiment?

    public init(rollout: JSONValue? = nil, experiment: Experiment? = nil) {
        self.rollout = rollout
        self.experiment = experiment
    }

    /// Parses and checks the admin body: only `rollout` and `experiment`; a slug; at least one branch; unique branch
    /// slugs; ratios ≥ 0 with a positive sum.
    public static func parse(_ value: JSONValue) throws(MessagingError) -> FeatureConfiguration {
        let r = try JSONReader(value, path: "feature", allowed: ["rollout", "experiment"])
        var config = FeatureConfiguration(rollout: r.object["rollout"].flatMap { $0 == .null ? nil : $0 })
        if r.has("experiment") {
            let e = try JSONReader(r.object["experiment"]!, path: "feature.experiment", allowed: ["slug", "branches"])
            guard let slug = try e.string("slug"), !slug.isEmpty else {
                throw MessagingError(code: "wrong_type", message: "feature.experiment.slug must be a non-empty string")
            }
            guard case .array(let rawBranches)? = e.object["branches"], !rawBranches.isEmpty else {
                throw MessagingError(code: "wrong_type", message: "feature.experiment.branches must be a non-empty list")
            }
            var branches: [Branch] = []
            for (i, raw) in rawBranches.enumerated() {
                let b = try JSONReader(raw, path: "feature.experiment.branches[\(i)]", allowed: ["slug", "ratio", "value"])
                guard let branchSlug = try b.string("slug"), !branchSlug.isEmpty else {
                    throw MessagingError(code: "wrong_type", message: "feature.experiment.branches[\(i)].slug must be a non-empty string")
                }
                let ratio = try b.int("ratio", default: 1)
                guard ratio >= 0 else { throw MessagingError(code: "wrong_type", message: "feature.experiment.branches[\(i)].ratio must be ≥ 0") }
                guard !branches.contains(where: { $0.slug == branchSlug }) else {
                    throw MessagingError(code: "duplicate_branch", message: "feature.experiment has two branches named \(branchSlug)")
                }
                branches.append(Branch(slug: branchSlug, ratio: ratio, value: b.object["value"] ?? .object([:])))
            }
            guard branches.reduce(0, { $0 + $1.ratio }) > 0 else {
                throw MessagingError(code: "wrong_type", message: "feature.experiment.branches' ratios must add up to more than 0")
            }
            config.experiment = Experiment(slug: slug, branches: branches)
        }
        return config
    }

    /// The branch a client is in (Nimbus's ratio sampling on `experiment-manager-<client>-<slug>-branch`).
    public func branch(for clientID: String) -> Branch? {
        guard let experiment else { return nil }
        guard let index = Sampling.branchIndex(clientID: clientID, slug: experiment.slug, ratios: experiment.branches.map { UInt64($0.ratio) })
        else { return nil }
        return experiment.branches[index]
    }

    /// The value a client gets: the rollout, with its branch's value (slug substituted) merged over it.
    public func value(for clientID: String) -> JSONValue {
        var layers: [JSONValue] = [rollout ?? .object([:])]
        if let experiment, let branch = branch(for: clientID) {
            layers.append(FeatureMerge.replacingExperiment(branch.value, slug: experiment.slug))
        }
        return FeatureMerge.layered(layers)
    }
}
