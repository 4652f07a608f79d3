/// The life of one hosted device as a value: start, stop and delete asked for in any order and at any time, each
/// answered in turn. It does no I/O; ``HostedDevice`` performs what it returns. (Issue 49: a stop that came while a
/// start was under way found no client yet, returned, and left the device running; its view then met the starting
/// client's directory lock, 409 `storage_locked`.)
///
/// | Phase | start | stop | delete | the work ends |
/// |---|---|---|---|---|
/// | stopped | starting: start the client | nothing to do | deleted | |
/// | starting | wait for the start | stop once started | stop once started, then deleted | running (or stopped if it failed), or on to stopping |
/// | running | nothing to do | stopping: close the client | stopping, then deleted | |
/// | stopping | wait, then start | wait for the stop | deleted once stopped | stopped (or deleted) |
/// | deleted | refused | refused | refused | |
struct DeviceLifecycle: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        case stopped, starting, running, stopping, deleted
    }

    /// What to do about a request.
    enum Action: Equatable, Sendable {
        /// Start the client now; report with ``started(_:)``.
        case start
        /// Close the client now; report with ``stopped()``.
        case stop
        /// Nothing to do: the device already is as asked.
        case none
        /// Other work is under way: wait until the phase changes, then ask again.
        case wait
        /// The device is gone.
        case refuse
    }

    private(set) var phase = Phase.stopped
    /// A stop (or delete) asked for while starting: performed as soon as the start ends.
    private(set) var stopWanted = false
    private(set) var deleteWanted = false

    mutating func startAsked() -> Action {
        switch phase {
        case .stopped:
            phase = .starting
            return .start
        case .running: return .none
        case .starting, .stopping: return .wait
        case .deleted: return .refuse
        }
    }

    mutating func stopAsked() -> Action {
        switch phase {
        case .stopped: return .none
        case .running:
            phase = .stopping
            return .stop
        case .starting:
            stopWanted = true
            return .wait
        case .stopping: return .wait
        case .deleted: return .refuse
        }
    }

    /// Delete: the device stops first (if it runs), then is gone; `.none` means it is gone now.
    mutating func deleteAsked() -> Action {
        deleteWanted = true
        guard phase == .stopped else { return stopAsked() }
        phase = .deleted
        return .none
    }

    /// The start ended; returns `.stop` when a stop was asked for meanwhile.
    mutating func started(_ succeeded: Bool) -> Action {
        guard phase == .starting else { return .none }
        guard succeeded else {
            phase = deleteWanted ? .deleted : .stopped
            stopWanted = false
            return .none
        }
        if stopWanted {
            stopWanted = false
            phase = .stopping
            return .stop
        }
        phase = .running
        return .none
    }

    /// The stop ended.
    mutating func stopped() {
        guard phase == .stopping else { return }
        phase = deleteWanted ? .deleted : .stopped
    }

    /// Whether a wait for the device's events ends now: the device is gone, or stopped and so adds none.
    var endsWaits: Bool { phase == .deleted || phase == .stopped }
}
