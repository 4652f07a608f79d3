import Foundation

/// Which texts name a time zone of the tz database.
///
/// Foundation also parses offsets (`GMT+5`, `UTC+05:30`) into zones named otherwise (`GMT+0500`): those are no tz
/// database names, carry no DST rules, and are refused here, as Beiwe's pytz refuses them.
public enum ZoneName {
    /// The zone for a tz database name, or nil.
    public static func zone(_ name: String) -> TimeZone? {
        guard !name.isEmpty, name.utf8.count <= 64,
              name.utf8.allSatisfy({ isNameByte($0) }),
              !hasOffsetForm(name),
              let zone = TimeZone(identifier: name)
        else { return nil }
        // Foundation renames what it parsed as an offset; a real name comes back as itself (`UTC` comes back as `GMT`).
        guard zone.identifier == name || name == "UTC" || name == "Etc/UTC" || name == "UCT" || name == "Zulu" else { return nil }
        return zone
    }

    /// True when `name` is a tz database name.
    public static func isValid(_ name: String) -> Bool { zone(name) != nil }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 47 || b == 95 || b == 45 || b == 43
    }

    /// `GMT+5`, `UTC-03:00`, `GMT+0500`: an offset written after GMT or UTC (`Etc/GMT+5` is a real name and passes).
    private static func hasOffsetForm(_ name: String) -> Bool {
        for prefix in ["GMT", "UTC"] where name.hasPrefix(prefix) && name.count > prefix.count {
            let next = name[name.index(name.startIndex, offsetBy: prefix.count)]
            if next == "+" || next == "-" { return true }
        }
        return false
    }
}
