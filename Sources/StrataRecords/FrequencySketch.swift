/// How often each page was looked up lately, approximately: a count-min sketch of small
/// saturating counters (TinyLFU's frequency filter). `NodeCache` admits a page into a full
/// cache only when it was looked up more often than the page it would evict, so a page read
/// a few times does not push out one read many times — under skewed (and repeated uniform)
/// lookups the cache keeps the pages that are looked up most.
///
/// Each key adds to four counters picked by independent hashes; its estimate is the least of
/// them (an overestimate only when all four collide). Counters stop at 15. After
/// `sampleSize` additions every counter is halved, so old popularity fades.
///
/// Fixed size after init (one byte per counter); nothing allocated per operation. Not
/// thread-safe: `NodeCache` holds it under its mutex.
package struct FrequencySketch {
    private var counters: [UInt8]
    private let mask: Int
    private var additions = 0
    /// Additions between two halvings: ten per entry the cache holds, as in TinyLFU (one per
    /// lookup: `NodeCache.probe` counts the leaf, not the interior nodes above it).
    package let sampleSize: Int

    /// A sketch for a cache of about `capacity` entries.
    package init(capacity: Int) {
        var size = 64
        while size < 8 * max(1, capacity) && size < 1 << 26 { size <<= 1 }
        counters = [UInt8](repeating: 0, count: size)
        mask = size - 1
        sampleSize = 10 * max(1, capacity)
    }

    /// The estimated number of recent lookups of the key with this hash.
    package func frequency(_ hash: UInt64) -> Int {
        var least = UInt8.max
        for row in 0..<4 { least = min(least, counters[index(hash, row)]) }
        return Int(least)
    }

    /// Counts one lookup of the key with this hash.
    package mutating func increment(_ hash: UInt64) {
        for row in 0..<4 {
            let slot = index(hash, row)
            if counters[slot] < 15 { counters[slot] += 1 }
        }
        additions += 1
        if additions >= sampleSize { halve() }
    }

    private mutating func halve() {
        additions /= 2
        for slot in counters.indices { counters[slot] >>= 1 }
    }

    @inline(__always)
    private func index(_ hash: UInt64, _ row: Int) -> Int {
        // Four independent slots from one 64-bit hash: remix per row.
        let mixed = (hash ^ (UInt64(row + 1) &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed >> 32) & mask
    }
}
