/// Which items to read back when checking data: a spread that always includes the first
/// and the last, so a lost tail or a lost head is caught.
enum Sample {
    /// Up to `count` indices in `0..<total`, evenly spread, ascending, first and last included.
    static func evenlySpread(count: Int, in total: Int) -> [Int] {
        guard total > 0, count > 0 else { return [] }
        if total <= count { return Array(0..<total) }
        if count == 1 { return [total - 1] }
        return (0..<count).map { $0 * (total - 1) / (count - 1) }
    }

    /// `count` ids drawn at random (repeats allowed) from `1...maximum`; equal seeds give
    /// equal ids, in every process.
    static func randomIDs(count: Int, upTo maximum: UInt64, seed: UInt64) -> [UInt64] {
        precondition(maximum >= 1, "no ids to draw from")
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt64.random(in: 1...maximum, using: &generator) }
    }

    /// A description of where two byte arrays first differ, for error messages.
    static func firstDifference(_ actual: [UInt8], _ expected: [UInt8]) -> String {
        if actual.count != expected.count { return "\(actual.count) bytes instead of \(expected.count)" }
        let offset = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? 0
        return "bytes differ from byte \(offset) on"
    }
}
