import Testing
import StrataTestSupport
@testable import Strata

// A context writes its changes in ascending id order (`Context.forEachAscending`): dense ids
// are placed in a table of their span, sparse ones sorted. Either way every change comes once,
// in order, with its own value.

@Suite struct ContextChangeOrderTests {
    /// The ids `forEachAscending` delivers, in its order, each with the length of its change's
    /// bytes (a delete: -1).
    private static func delivered(_ changes: [UInt64: Context.Change]) -> [(UInt64, Int)] {
        var seen: [(UInt64, Int)] = []
        Context.forEachAscending(changes) { id, change in
            switch change {
            case .upsert(let bytes, _): seen.append((id, bytes.count))
            case .delete: seen.append((id, -1))
            }
        }
        return seen
    }

    /// The same from the keys sorted.
    private static func expected(_ changes: [UInt64: Context.Change]) -> [(UInt64, Int)] {
        changes.keys.sorted().map { id in
            if case .upsert(let bytes, _)? = changes[id] { return (id, bytes.count) }
            return (id, -1)
        }
    }

    @Test func denseAndSparseIdsComeInAscendingOrder() {
        let seed = SeededRandom.seed(default: 0x0C4A_11E5)
        print("ContextChangeOrderTests seed=\(seed) (STRATA_TEST_SEED=\(seed) to replay)")
        var random = SeededRandom(seed: seed)
        // Spans from dense (every id of a range) to sparse (ids far apart, past the table's
        // bound of four times the count), and the edges: none, one, two far apart, ids near
        // the top of the range.
        var cases: [[UInt64: Context.Change]] = [[:], [7: .delete], [0: .delete, .max: .upsert([1], isNew: false)]]
        for spread: UInt64 in [1, 2, 4, 5, 1_000, 1 << 40] {
            for count in [2, 3, 17, 1_000] {
                var changes: [UInt64: Context.Change] = [:]
                let base = random.next() % (1 << 50)
                while changes.count < count {
                    let id = base + random.next() % (UInt64(count) * spread)
                    changes[id] = random.next() % 4 == 0 ? .delete : .upsert([UInt8](repeating: 0, count: Int(random.next() % 9)),
                                                                              isNew: random.next() % 2 == 0)
                }
                cases.append(changes)
            }
        }
        var top: [UInt64: Context.Change] = [:]
        for offset: UInt64 in 0..<50 { top[.max - offset * 3] = .upsert([UInt8](repeating: 1, count: Int(offset % 5)), isNew: true) }
        cases.append(top)
        for changes in cases {
            let got = Self.delivered(changes), want = Self.expected(changes)
            #expect(got.map(\.0) == want.map(\.0), "seed \(seed): \(changes.count) ids")
            #expect(got.map(\.1) == want.map(\.1), "seed \(seed): \(changes.count) ids")
        }
    }
}
