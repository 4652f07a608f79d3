import Foundation
import NIOCore

/// How many cores this process may run on: its CPU affinity (what `taskset -c 0` sets), at most NIO's count (which
/// reads cgroup quotas and cpusets but not the affinity), as Go's `GOMAXPROCS` and Java's `availableProcessors` read
/// it. The relay and the load tool size their event loops by it: loops beyond the cores a process may use take turns
/// on them, with a context switch and an eventfd wake-up at hops between them.
package enum UsableCores {
    /// The usable cores, at least 1.
    package static func count() -> Int {
        let limit = System.coreCount
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let allowed = parse(status: status) else { return limit }
        return max(1, min(limit, allowed))
    }

    /// The number of bits set in the `Cpus_allowed:` line (hexadecimal, in comma-separated groups), nil without one.
    package static func parse(status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix("Cpus_allowed:") {
            var bits = 0
            for character in line.dropFirst("Cpus_allowed:".count) where character != "," && !character.isWhitespace {
                guard let digit = character.hexDigitValue else { return nil }
                bits += digit.nonzeroBitCount
            }
            return bits
        }
        return nil
    }
}
