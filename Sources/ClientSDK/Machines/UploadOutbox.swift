/// Which answer files are being uploaded right now: one upload in flight per file, so `submit` and the background retry
/// never POST the same file at once (which made `.submitted` and its telemetry event fire twice).
struct UploadOutbox: Sendable, Equatable {
    private(set) var inFlight: Set<String> = []

    /// Claims `fileName` for one upload; false when another upload of it is under way (the caller skips it).
    mutating func begin(_ fileName: String) -> Bool { inFlight.insert(fileName).inserted }

    /// The upload of `fileName` finished, whatever its outcome.
    mutating func end(_ fileName: String) { inFlight.remove(fileName) }
}
