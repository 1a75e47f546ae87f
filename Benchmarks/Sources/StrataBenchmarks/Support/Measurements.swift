/// Summaries of repeated measurements.
enum Measurements {
    /// The median (the mean of the two middle values for an even count); 0 when empty.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The lowest and highest value as "low–high", two decimals; "0.00–0.00" when empty.
    static func range(_ values: [Double]) -> String {
        String(format: "%.2f–%.2f", values.min() ?? 0, values.max() ?? 0)
    }

    /// Runs `pairs` pairs of `first` and `second`, the side going first alternating: `first`
    /// goes first in pairs 0, 2, 4…, so neither side always follows the other.
    static func alternating(pairs: Int, _ first: () throws -> Void, _ second: () throws -> Void) rethrows {
        for pair in 0..<pairs {
            if pair % 2 == 0 { try first(); try second() } else { try second(); try first() }
        }
    }
}
