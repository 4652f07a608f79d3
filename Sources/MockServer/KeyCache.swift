import Foundation
import Synchronization
import SurveyCrypto

/// Parsed RSA keys by owner id (a study, or a participant with its own key), so registrations and uploads
/// do not decode the same DER again and again. Keys never change once created, so entries never go stale.
final class KeyCache: Sendable {
    private let keys = Mutex<[String: RSAKey]>([:])

    /// The private key of `owner`, parsed from `der` the first time.
    func key(for owner: String, der: Data) throws(CryptoError) -> RSAKey {
        if let key = keys.withLock({ $0[owner] }) { return key }
        let key = try RSAKey(privateKeyDER: [UInt8](der))
        keys.withLock { $0[owner] = key }
        return key
    }

    /// The key used for a participant's files: their own when the study has per-participant keys, else the study's.
    func key(participant: ParticipantRecord, study: StudyRecord) throws(CryptoError) -> RSAKey {
        if let own = participant.privateKey { return try key(for: "participant:" + participant.patientId, der: own) }
        return try key(for: "study:" + study.id, der: study.privateKey)
    }
}
