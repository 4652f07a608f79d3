#if canImport(Glibc)
import Glibc
#endif

/// How many devices one process can hold within its descriptor limit (issue 49: each device holds 3 descriptors, so
/// under the common soft limit of 1,024 the process ran out at about 330 devices against a documented cap of 10,000,
/// and the next study push killed it).
///
/// Measured per running device (`ls /proc/PID/fd` around 20 creates): its directory's lock file, its relay event
/// stream's socket and its telemetry event log; a stopped device holds none.
package enum DescriptorBudget {
    /// Descriptors one running device holds.
    package static let perDevice = 3
    /// Descriptors kept for everything else: the API's connections, the shared HTTP connections of uploads and
    /// registrations, the process's own files.
    package static let reserve = 256

    /// Raises the soft descriptor limit to the hard one (as servers do; the hard limit is the administrator's), and
    /// returns the soft limit in force.
    package static func raiseSoftLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY (all ones) clamps to Int.max
    }

    /// The devices a process with `descriptors` may hold: at most ``DeviceFleet/maxDevices``.
    package static func devices(descriptors: Int) -> Int {
        max(0, min(DeviceFleet.maxDevices, (descriptors - reserve) / perDevice))
    }
}
