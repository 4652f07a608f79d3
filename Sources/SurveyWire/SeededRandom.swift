// Seeded randomness for reproducible fault injection (both servers use it).
/// SplitMix64: a small, fast generator whose whole sequence follows from its seed, so a fault run can be replayed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double?) -> Bool {
        guard let p, p > 0 else { return false }
        return Double.random(in: 0..<1, using: &self) < p
    }
}

/// A `{"min", "max"}` range of milliseconds, as the fault APIs of both servers take it (`delay_ms`).
public struct MillisecondRange: Codable, Sendable, Equatable {
    /// The shortest wait, in milliseconds.
    public var min: Int
    /// The longest wait, in milliseconds (at least `min`).
    public var max: Int
    /// Creates the value from its fields.
    public init(min: Int, max: Int) {
        self.min = min
        self.max = max
    }
}
