import Foundation
import Messaging
import SurveyWire
import Transport

/// Feature values on the device: fetched from the server (`GET /features/<app_id>`), kept on disk as the last good copy
/// for offline use, and read merged over the app's defaults in the app's own types.
extension SurveyClient {
    /// Fetches this client's feature values (`GET /features/<app_id>?client_id=`) and keeps them as the last good copy.
    /// - Throws: `features_unavailable` without a `featuresURL`, `transport` or `features_failed`: the cached copy stays in
    ///   use; `storage` when it could not be kept; `closed`.
    @discardableResult
    public func refreshFeatures() async throws(SurveyClientError) -> FeatureValues {
        guard !isClosed else { throw .closed }
        guard let endpoint = configuration.featuresURL else {
            throw SurveyClientError(code: SurveyClientError.Code.featuresUnavailable.rawValue, message: "no featuresURL is configured; the cached copy or the defaults serve")
        }
        let query = state.clientID.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? state.clientID
        let response: TransportResponse
        do {
            response = try await http.send(TransportRequest(url: "\(endpoint)/features/\(Self.sanitizedAppID(configuration.appID))?client_id=\(query)"))
        } catch {
            throw SurveyClientError(code: "transport", message: "features: \(error)")
        }
        guard response.status == 200, let features = try? response.decode(AdminWire.Features.self) else {
            throw SurveyClientError(code: SurveyClientError.Code.featuresFailed.rawValue, message: "features answered \(response.status)", status: response.status)
        }
        ensureMessagingDirectory()
        try files.write(features, to: featuresURL)
        let values = FeatureValues(features)
        cachedFeatures = values
        return values
    }

    /// The last feature values fetched (nil before the first success).
    public var features: FeatureValues? {
        if cachedFeatures == nil { cachedFeatures = files.read(AdminWire.Features.self, from: featuresURL).map(FeatureValues.init) }
        return cachedFeatures
    }

    /// A feature's value in the app's own type: the server's value (the last good copy) merged over `defaults` (objects
    /// per field, maps per key, lists replaced, `null` deletes), as Nimbus merges a rollout over a feature's defaults;
    /// `defaults` itself when nothing was ever fetched.
    ///
    /// ```swift
    /// struct Onboarding: Codable { var title: String; var dismissable: Bool }
    /// let onboarding = try await client.featureValue("onboarding", defaults: Onboarding(title: "Hello", dismissable: true))
    /// ```
    /// - Throws: `feature_invalid` when the merged value is not a `Value` (a field of another type from the server: the
    ///   app then keeps its defaults, as Nimbus drops an invalid value); `closed`.
    public func featureValue<Value: Codable>(_ featureID: String, defaults: Value) throws(SurveyClientError) -> Value {
        guard !isClosed else { throw .closed }
        guard let value = features?.values[featureID] else { return defaults }
        do {
            let merged = FeatureMerge.merge(try WireJSON.decode(JSONValue.self, from: WireJSON.encode(defaults)), value)
            return try WireJSON.decode(Value.self, from: WireJSON.encode(merged))
        } catch {
            throw SurveyClientError(code: SurveyClientError.Code.featureInvalid.rawValue,
                                    message: "feature \(featureID) does not read as \(Value.self): \(error)")
        }
    }

    /// A feature's value as JSON (the server's merged over `defaults`), for the messaging recipe.
    func featureJSON(_ featureID: String, defaults: JSONValue) -> JSONValue {
        guard let value = features?.values[featureID] else { return defaults }
        return FeatureMerge.merge(defaults, value)
    }
}
