import Foundation
import Hummingbird
import Messaging
import ServerSupport
import SurveyWire

/// Feature configuration for messaging, microsurveys and onboarding (PROTOCOL.md §1.6, §2): the admin sets a rollout
/// value and an experiment per app and feature; a device asks for its values with its client id and gets the rollout
/// with its branch merged over it (Nimbus's ratio bucketing on the client id, so a client always lands in one branch).
struct FeatureRoutes: Sendable {
    let context: ServerContext
    /// The features' part of the store.
    var store: any TelemetryStore { context.store }

    func add(to router: Router<BasicRequestContext>) {
        router.get("/features/{app_id}") { request, ctx in try await features(request, appID: try ctx.parameters.require("app_id")) }
        let admin = router.group("/__admin/features")
        admin.put("/{app_id}/{feature_id}") { request, ctx in
            try await setFeature(request, appID: try ctx.parameters.require("app_id"), featureID: try ctx.parameters.require("feature_id"))
        }
        admin.delete("/{app_id}/{feature_id}") { _, ctx in
            try await deleteFeature(appID: try ctx.parameters.require("app_id"), featureID: try ctx.parameters.require("feature_id"))
        }
        admin.get("/{app_id}") { _, ctx in try await listFeatures(appID: try ctx.parameters.require("app_id")) }
    }

    func setFeature(_ request: Request, appID: String, featureID: String) async throws -> Response {
        let bytes = try await request.collectBody(limit: context.configuration.maxBodyBytes)
        let body: JSONValue
        do { body = try JSONDecoder().decode(JSONValue.self, from: Data(bytes)) } catch { throw APIError.invalidJSON(error) }
        let configuration: FeatureConfiguration
        do throws(MessagingError) {
            configuration = try FeatureConfiguration.parse(body)
        } catch {
            throw APIError(.badRequest, code: error.code, error.message)
        }
        let text = String(decoding: try WireJSON.encode(configuration), as: UTF8.self)
        let now = context.realNow().timeIntervalSince1970
        try await store.setFeature(appID: appID, featureID: featureID, config: text, at: now)
        return JSONResponse.empty(.noContent)
    }

    func deleteFeature(appID: String, featureID: String) async throws -> Response {
        let deleted = try await store.deleteFeature(appID: appID, featureID: featureID)
        guard deleted else { throw MockServerError.notFound("feature", "\(appID)/\(featureID)") }
        return JSONResponse.empty(.noContent)
    }

    func stored(appID: String) async throws -> [(String, FeatureConfiguration)] {
        let rows = try await store.features(appID: appID)
        return try rows.map { ($0.0, try WireJSON.decode(FeatureConfiguration.self, from: $0.1)) }
    }

    func listFeatures(appID: String) async throws -> Response {
        var out: [String: FeatureConfiguration] = [:]
        for (id, config) in try await stored(appID: appID) { out[id] = config }
        return JSONResponse.make(out)
    }

    func features(_ request: Request, appID: String) async throws -> Response {
        guard let clientID = request.uri.queryParameters["client_id"].map(String.init), !clientID.isEmpty else {
            throw APIError(.badRequest, code: "missing_field", "client_id is required", field: "client_id")
        }
        var values: [String: JSONValue] = [:]
        var enrollments: [AdminWire.Enrollment] = []
        for (featureID, config) in try await stored(appID: appID) {
            values[featureID] = config.value(for: clientID)
            if let experiment = config.experiment, let branch = config.branch(for: clientID) {
                enrollments.append(AdminWire.Enrollment(slug: experiment.slug, branch: branch.slug, featureID: featureID))
            }
        }
        return JSONResponse.make(AdminWire.Features(features: values, enrollments: enrollments))
    }
}
