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

    /// Random bytes (8 per generator step).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { raw in
            var index = 0
            while index < count {
                var word = next()
                let n = min(8, count - index)
                withUnsafeBytes(of: &word) { source in
                    raw.baseAddress!.advanced(by: index).copyMemory(from: source.baseAddress!, byteCount: n)
                }
                index += n
            }
        }
        return result
    }

    /// Bytes that look like record pages: repeated field names with varying digits,
    /// compressible about 2x like real record pages.
    public mutating func recordLikeBytes(_ count: Int) -> [UInt8] {
        let template = Array("Last0000, First0000;created=0000000000;note=lorem ipsum dolor sit amet 0000|".utf8)
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBufferPointer { out in
            var index = 0
            while index < count {
                var digits = next()
                for byte in template where index < count {
                    if byte == UInt8(ascii: "0") {
                        out[index] = UInt8(ascii: "0") + UInt8(digits % 10)
                        digits /= 10
                        if digits == 0 { digits = next() }
                    } else {
                        out[index] = byte
                    }
                    index += 1
                }
            }
        }
        return result
    }
}
