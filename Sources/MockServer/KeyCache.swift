import Foundation
import Synchronization
import SurveyCrypto
import SurveyWire

/// Parsed RSA keys by owner id (a study, or a participant with its own key), so registrations and uploads
/// do not decode the same DER again and again. Keys never change once created, so entries never go stale. Each map
/// holds at most ``limit`` entries (a study with per-participant keys has one per participant): past it the map starts
/// over, and keys are parsed again as they are used.
final class KeyCache: Sendable {
    static let defaultLimit = 10_000

    /// Entries each map holds at most.
    let limit: Int

    init(limit: Int = KeyCache.defaultLimit) {
        self.limit = limit
    }

    /// Inserts into a bounded map.
    private func put<V>(_ map: inout [String: V], _ key: String, _ value: V) {
        if map.count >= limit { map.removeAll(keepingCapacity: true) }
        map[key] = value
    }

    /// Entries held in each map (private keys, public keys, settings), for tests.
    var counts: (keys: Int, publicKeys: Int, settings: Int) {
        (keys.withLock { $0.count }, publicKeys.withLock { $0.count }, settings.withLock { $0.count })
    }

    private let keys = Mutex<[String: RSAKey]>([:])
    private let publicKeys = Mutex<[String: String]>([:])
    private let settings = Mutex<[String: String]>([:])

    /// Base64 DER of the public key participants of `study` (or this participant) encrypt with, as
    /// `client_public_key` carries it.
    func publicKeyBase64(participant: ParticipantRecord, study: StudyRecord) throws(CryptoError) -> String {
        let owner = participant.privateKey == nil ? "study:" + study.id : "participant:" + participant.patientId
        if let text = publicKeys.withLock({ $0[owner] }) { return text }
        let text = Data(try key(participant: participant, study: study).publicKeyDER()).base64EncodedString()
        publicKeys.withLock { self.put(&$0, owner, text) }
        return text
    }

    /// A study's `device_settings` JSON, encoded once per distinct settings text.
    func deviceSettingsJSON(_ study: StudyRecord) -> String {
        let key = study.id + "\u{0}" + study.deviceSettings
        if let text = settings.withLock({ $0[key] }) { return text }
        let text = (try? WireJSON.encodeString(DeviceSettings.merged(study.settingsObject, id: MobileRoutes.settingsID(study.id)))) ?? "{}"
        settings.withLock { self.put(&$0, key, text) }
        return text
    }

    /// The private key of `owner`, parsed from `der` the first time.
    func key(for owner: String, der: Data) throws(CryptoError) -> RSAKey {
        if let key = keys.withLock({ $0[owner] }) { return key }
        let key = try RSAKey(privateKeyDER: [UInt8](der))
        keys.withLock { self.put(&$0, owner, key) }
        return key
    }

    /// The key used for a participant's files: their own when the study has per-participant keys, else the study's.
    func key(participant: ParticipantRecord, study: StudyRecord) throws(CryptoError) -> RSAKey {
        if let own = participant.privateKey { return try key(for: "participant:" + participant.patientId, der: own) }
        return try key(for: "study:" + study.id, der: study.privateKey)
    }
}
