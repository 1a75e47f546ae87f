import Testing
import StrataRecords
import StrataTestSupport

/// `InterpolationSearch.lowerBound`, which record tree lookups use in leaves and interior
/// nodes: the same answer as a plain binary search on every kind of sorted ids — dense, with
/// gaps, clustered, huge — for targets in, between, below and above them.
@Suite struct InterpolationSearchTests {
    static func reference(_ keys: [UInt64], _ target: UInt64, in range: Range<Int>) -> Int {
        var low = range.lowerBound, high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < target { low = middle + 1 } else { high = middle }
        }
        return low
    }

    @Test func answersAsBinarySearchDoesOnSortedIDs() {
        let seed = SeededRandom.seed(default: 0x5EA5C4)
        print("InterpolationSearchTests seed \(seed)")
        var random = SeededRandom(seed: seed)
        var checked = 0
        for round in 0..<2_000 {
            let count = Int.random(in: 0...300, using: &random)
            var keys: [UInt64] = []
            var next = round % 7 == 0 ? UInt64.max - UInt64(count) * 3 - 10 : UInt64.random(in: 0...1_000, using: &random)
            let shape = round % 5
            for index in 0..<count {
                keys.append(next)
                let step: UInt64
                switch shape {
                case 0: step = 1  // dense, as allocated ids are
                case 1: step = UInt64.random(in: 1...3, using: &random)  // a few deleted
                case 2: step = index % 50 == 0 ? UInt64.random(in: 1...1_000_000, using: &random) : 1  // clusters
                case 3: step = (UInt64.random(in: 1...(1 << 40), using: &random) >> UInt64.random(in: 0...40, using: &random)) + 1
                default: step = index == count / 2 ? (1 << 50) : 1  // one huge gap
                }
                let (sum, wrapped) = next.addingReportingOverflow(step)
                if wrapped { break }  // keep what ascends
                next = sum
            }
            let lower = Int.random(in: 0...keys.count, using: &random)
            let upper = Int.random(in: lower...keys.count, using: &random)
            var targets: [UInt64] = [0, 1, UInt64.max, UInt64.max - 1]
            for key in keys.prefix(upper).dropFirst(lower) { targets += [key, key &- 1, key &+ 1] }
            for _ in 0..<20 { targets.append(UInt64.random(in: 0...UInt64.max, using: &random)) }
            for target in targets {
                let expected = Self.reference(keys, target, in: lower..<upper)
                let actual = InterpolationSearch.lowerBound(of: target, in: lower..<upper) { keys[$0] }
                #expect(actual == expected, "seed \(seed) round \(round): target \(target) in \(lower)..<\(upper) of \(keys.count) keys")
                checked += 1
            }
        }
        #expect(checked > 100_000)
    }

    @Test func staysInRangeOnKeysThatDoNotAscend() {
        // A corrupt node's ids: any index of the range (or its end), never a trap.
        var random = SeededRandom(seed: 7)
        for _ in 0..<1_000 {
            let keys = (0..<Int.random(in: 1...64, using: &random)).map { _ in UInt64.random(in: 0...100, using: &random) }
            let target = UInt64.random(in: 0...101, using: &random)
            let index = InterpolationSearch.lowerBound(of: target, in: 0..<keys.count) { keys[$0] }
            #expect((0...keys.count).contains(index))
        }
    }
}
