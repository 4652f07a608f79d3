import Foundation

/// Converts between instants and a time zone's wall-clock time, with the project's DST rules:
/// - a wall-clock time inside a spring-forward gap resolves to the first valid minute after the gap
///   (02:30 on the spring-forward day in America/New_York → 03:00 EDT);
/// - a wall-clock time inside a fall-back overlap resolves to its first occurrence (the earlier instant).
public struct ZoneRules: Sendable {
    /// The zone.
    public let timeZone: TimeZone

    public init(_ timeZone: TimeZone) { self.timeZone = timeZone }

    /// UTC offset in seconds at an instant (epoch seconds).
    public func offset(at epochSeconds: Int64) -> Int {
        timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(epochSeconds)))
    }

    /// The local date and seconds after local midnight of an instant.
    public func local(_ date: Date) -> (date: LocalDate, secondsOfDay: Int) {
        let t = Int64(date.timeIntervalSince1970.rounded(.down))
        let local = t + Int64(offset(at: t))
        let days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400)
        return (LocalDate(daysSinceEpoch: Int(days)), Int(local - days * 86400))
    }

    /// The instant a wall-clock time happens, by the rules above.
    public func instant(_ date: LocalDate, _ time: LocalTime) -> Date {
        Date(timeIntervalSince1970: TimeInterval(epochSeconds(date, time)))
    }

    /// The instant (epoch seconds) a wall-clock time happens, by the rules above.
    public func epochSeconds(_ date: LocalDate, _ time: LocalTime) -> Int64 {
        let wall = Int64(date.daysSinceEpoch) * 86400 + Int64(time.secondsOfDay)
        // Offsets in force a day either side bracket every transition that can affect this wall time.
        let early = offset(at: wall - 86400)
        let late = offset(at: wall + 86400)
        var candidates: [Int64] = []
        for o in Set([early, late]) {
            let t = wall - Int64(o)
            if offset(at: t) == o { candidates.append(t) }
        }
        // A zone can have two transitions within two days (rare); probe the offset at the naive guess too.
        let mid = offset(at: wall - Int64(early))
        let tm = wall - Int64(mid)
        if offset(at: tm) == mid { candidates.append(tm) }
        if let first = candidates.min() { return first }
        // In a gap: the first valid minute after it is the transition instant, rounded up to a minute.
        var lo = wall - Int64(max(early, late))  // local clock still before the gap
        var hi = wall - Int64(min(early, late))  // local clock already after the gap
        let before = offset(at: lo)
        while hi - lo > 1 {
            let m = lo + (hi - lo) / 2
            if offset(at: m) == before { lo = m } else { hi = m }
        }
        let remainder = ((hi % 60) + 60) % 60
        return remainder == 0 ? hi : hi + (60 - remainder)
    }
}
