/// Searching sorted record ids by interpolation: the first probe goes where the target would
/// be if the ids were evenly spread between the range's ends, then a binary search finishes
/// in what is left. Record ids are allocated one after another, so within a node they are
/// nearly dense and the first probe usually lands on the answer: a point lookup touches two
/// or three cache lines of a node instead of one per halving (read-by-id: most lookups miss
/// the CPU caches on every line they touch).
package enum InterpolationSearch {
    /// The first index in `range` whose key is at least `target` (`range.upperBound` when
    /// none is). `key` must not decrease over `range`; any key order gives an index in
    /// `range`...`upperBound`, and the binary search's answer when they ascend.
    @inline(__always)
    package static func lowerBound(of target: UInt64, in range: Range<Int>, key: (Int) -> UInt64) -> Int {
        guard !range.isEmpty else { return range.lowerBound }
        let firstIndex = range.lowerBound, lastIndex = range.upperBound - 1
        let first = key(firstIndex)
        if target <= first { return firstIndex }
        let last = key(lastIndex)
        if target > last { return range.upperBound }
        // first < target <= last: the answer is in low...high (and key(high) >= target).
        var low = firstIndex + 1, high = lastIndex
        if low < high {
            // Where the target falls between the ends, scaled to the indices (exact in
            // integers: (target - first) <= (last - first), so the quotient fits).
            let spread = UInt64(lastIndex - firstIndex)
            let (high64, low64) = (target - first).multipliedFullWidth(by: spread)
            let step = Int((last - first).dividingFullWidth((high64, low64)).quotient)
            let guess = min(max(firstIndex + step, low), high)
            if key(guess) < target {
                low = guess + 1
                if low < high && key(low) >= target { return low }
            } else {
                high = guess
                if guess > low && key(guess - 1) < target { return guess }
            }
        }
        while low < high {
            let middle = (low + high) / 2
            if key(middle) < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
