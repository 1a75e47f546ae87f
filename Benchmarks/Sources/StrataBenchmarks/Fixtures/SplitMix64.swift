/// SplitMix64: a small, fast, seedable generator. Equal seeds give equal sequences on
/// every platform, so every run writes the same bytes.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// SplitMix64's output function: scrambles the bits of `value`. Seeding generators with
    /// `mix(seed ^ n)` gives unrelated sequences for consecutive `n` (plain `seed + n` would
    /// give overlapping ones).
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
