import Foundation

/// What the device reports of its operating system, within Beiwe's column limits.
enum HostOS {
    /// Beiwe's `os_version` column holds 16 characters; a longer value fails registration with a 500 there.
    static let maxVersionLength = 16

    /// The machine's architecture as `uname -m` names it (`x86_64`, `aarch64`): Glean's `client_info.architecture`.
    static let architecture: String = {
        var name = utsname()
        guard uname(&name) == 0 else { return "unknown" }
        let machine = withUnsafeBytes(of: &name.machine) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return machine.isEmpty ? "unknown" : machine
    }()

    /// `VERSION_ID` from `/etc/os-release` (`12`, `22.04`), else the kernel release (`6.1.0-18-amd64`), else
    /// Foundation's `major.minor.patch`; at most 16 characters. Real apps send `14` or `17.5.1`.
    static let versionID: String = {
        if let text = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("VERSION_ID=") {
                let value = line.dropFirst("VERSION_ID=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"' "))
                if !value.isEmpty { return String(value.prefix(maxVersionLength)) }
            }
        }
        if let kernel = try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8) {
            let value = kernel.trimmingCharacters(in: .whitespacesAndNewlines)
            if !value.isEmpty { return String(value.prefix(maxVersionLength)) }
        }
        let v = ProcessInfo.processInfo.operatingSystemVersion
        return "\(v.majorVersion).\(v.minorVersion).\(v.patchVersion)"
    }()
}
