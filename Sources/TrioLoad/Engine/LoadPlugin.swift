/// What one load scenario does with a start; the engine (`LoadEngine`) paces, admits and records. Registration and
/// push are the two plug-ins.
protocol LoadPlugin: Sendable {
    /// Called once, when the run's clock starts and before the first iteration, with the run's recorder (a plug-in
    /// whose iterations complete elsewhere, as a push does on its device, reports there).
    func willStart(_ recorder: LoadRecorder)

    /// Runs iteration `index` (0, 1, 2, … in start order).
    func iterate(_ index: Int, recorder: LoadRecorder) async -> IterationOutcome
}

extension LoadPlugin {
    func willStart(_ recorder: LoadRecorder) {}
}

/// How an iteration ended, as far as its own task knows.
enum IterationOutcome: Sendable, Equatable {
    /// Done, and it worked.
    case succeeded
    /// Done, and it failed; the error key (`register_user:403:invalid_credentials`, `transport:timed_out`).
    case failed(String)
    /// Its request went out; it completes when someone calls `LoadRecorder.receipt(_:at:)` (a push, when its
    /// device receives it), or counts as lost when the run's grace ends first.
    case awaitingCompletion
}
