#if canImport(Glibc)
import Glibc
#endif

/// A small, fast, seedable generator (SplitMix64) for reproducible tests.
/// Every randomized test takes its seed from `SeededRandom.seed(default:)`, prints it, and
/// can be rerun with the same seed by setting `STRATA_TEST_SEED`.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator; equal seeds give equal sequences on every platform.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed to use: `STRATA_TEST_SEED` from the environment when set, else `fallback`.
    public static func seed(default fallback: UInt64) -> UInt64 {
        if let text = getenv("STRATA_TEST_SEED"), let value = UInt64(String(cString: text)) { return value }
        return fallback
    }

    /// Random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    /// Bytes that look like record pages: repetitive text with numbers, compressible like real data.
    public mutating func recordLikeBytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count + 64)
        while out.count < count {
            let n = Int.random(in: 0..<100_000, using: &self)
            out.append(contentsOf: Array("Last\(n), First\(n % 997);note=lorem ipsum \(n * 7)|".utf8))
        }
        return Array(out.prefix(count))
    }
}
