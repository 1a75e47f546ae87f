/// A random 128-bit identifier given to a store when it is created. Every superblock and
/// segment header carries it, so a segment copied in from another store is rejected.
package struct StoreID: Hashable, Sendable, CustomStringConvertible {
    package var high: UInt64
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh random identifier.
    package static func random() -> StoreID {
        var generator = SystemRandomNumberGenerator()
        return StoreID(high: generator.next(), low: generator.next())
    }

    package var description: String {
        let hex = String(high, radix: 16) + String(low, radix: 16)
        return String(repeating: "0", count: max(0, 32 - hex.count)) + hex
    }
}
