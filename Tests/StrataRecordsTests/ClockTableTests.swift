import Testing
import StrataRecords
import StrataTestSupport

/// `ClockTable`, the node cache's structure: checked against a naive model of the same CLOCK
/// policy (linear search, no index) under seeded random operations, and for the eviction
/// behaviour the node cache relies on.
@Suite struct ClockTableTests {
    typealias Key = ClockTable<Box>.Key

    final class Box {
        let key: Key
        init(_ key: Key) { self.key = key }
    }

    /// The same policy, done the obvious way.
    struct Model {
        var entries: [(key: Key, cost: Int, referenced: Bool)] = []
        var hand = 0
        let budget: Int

        mutating func get(_ key: Key) -> Bool {
            guard let index = entries.firstIndex(where: { $0.key == key }) else { return false }
            entries[index].referenced = true
            return true
        }

        mutating func insert(_ key: Key, cost: Int) {
            guard !entries.contains(where: { $0.key == key }) else { return }
            entries.append((key, cost, false))
            while entries.map(\.cost).reduce(0, +) > budget && entries.count > 1 {
                while true {
                    if hand >= entries.count { hand = 0 }
                    if entries[hand].referenced {
                        entries[hand].referenced = false
                        hand += 1
                    } else {
                        entries.swapAt(hand, entries.count - 1)
                        entries.removeLast()
                        hand += 1
                        break
                    }
                }
            }
        }
    }

    @Test func matchesModelUnderRandomOperations() {
        let seed = SeededRandom.seed(default: 0xC10C_7AB1)
        print("ClockTableTests seed \(seed)")
        var random = SeededRandom(seed: seed)
        for round in 0..<20 {
            let budget = Int.random(in: 1...400, using: &random)
            var table = ClockTable<Box>(budget: budget)
            var model = Model(budget: budget)
            // Few distinct keys (many hits, many collisions) in some rounds, many in others.
            let pageRange = round % 2 == 0 ? 1...40 : 1...5_000
            for step in 0..<4_000 {
                let key = Key(pageID: UInt64.random(in: UInt64(pageRange.lowerBound)...UInt64(pageRange.upperBound), using: &random),
                              lsn: UInt64.random(in: 1...3, using: &random))
                if Bool.random(using: &random) {
                    let object = table.get(key)
                    #expect((object != nil) == model.get(key), "round \(round) step \(step): get")
                    if let object { #expect(object.key == key) }
                } else {
                    let cost = Int.random(in: 1...60, using: &random)
                    table.insert(Box(key), for: key, cost: cost)
                    model.insert(key, cost: cost)
                }
                #expect(table.count == model.entries.count, "round \(round) step \(step): count")
                #expect(table.cost == model.entries.map(\.cost).reduce(0, +))
                #expect(table.cost <= budget || table.count == 1)
                if step % 97 == 0 {
                    #expect(table.structuralProblem() == nil, "round \(round) step \(step)")
                    #expect(table.cachedKeys == model.entries.map(\.key))
                }
            }
            #expect(table.structuralProblem() == nil)
            #expect(table.cachedKeys == model.entries.map(\.key))
            for entry in model.entries { #expect(table.contains(entry.key)) }
            table.removeAll()
            #expect(table.count == 0 && table.cost == 0 && table.structuralProblem() == nil)
        }
    }

    @Test func evictsTheOldestUnusedFirst() {
        var table = ClockTable<Box>(budget: 4)
        let keys = (1...7).map { Key(pageID: UInt64($0), lsn: 1) }
        for key in keys[0..<4] { table.insert(Box(key), for: key, cost: 1) }
        #expect(table.count == 4)
        for key in keys[4...] { table.insert(Box(key), for: key, cost: 1) }
        // Three over budget: the three oldest went.
        #expect(Set(table.cachedKeys.map(\.pageID)) == [4, 5, 6, 7])
    }

    @Test func entriesReadAgainSurviveOneTimeReads() {
        var table = ClockTable<Box>(budget: 100)
        let hot = (1...10).map { Key(pageID: UInt64($0), lsn: 7) }
        for key in hot { table.insert(Box(key), for: key, cost: 1) }
        // A long stream of pages read once (a scan), the hot ones read between them.
        for page in 1_000..<20_000 {
            let key = Key(pageID: UInt64(page), lsn: 1)
            table.insert(Box(key), for: key, cost: 1)
            if page % 10 == 0 { for key in hot { #expect(table.get(key) != nil, "hot page \(key.pageID) evicted at \(page)") } }
        }
        #expect(table.cost <= 100)
        #expect(table.structuralProblem() == nil)
    }

    @Test func oneEntryOverBudgetIsKeptAlone() {
        var table = ClockTable<Box>(budget: 10)
        let small = Key(pageID: 1, lsn: 1), large = Key(pageID: 2, lsn: 1)
        table.insert(Box(small), for: small, cost: 5)
        table.insert(Box(large), for: large, cost: 50)
        #expect(table.cachedKeys == [large])
        #expect(table.get(large) != nil)
        // A key already present keeps its object and cost.
        let again = Box(large)
        table.insert(again, for: large, cost: 1)
        #expect(table.get(large) !== again && table.cost == 50)
    }
}

@Suite struct FrequencySketchTests {
    /// The estimate never undercounts (count-min), stops at 15, and halves after
    /// `sampleSize` additions; with few keys it is exact.
    @Test func estimatesAreUpperBoundsThatSaturateAndFade() {
        let seed = SeededRandom.seed(default: 0xF4E9)
        print("FrequencySketchTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var sketch = FrequencySketch(capacity: 64)
        var counts: [UInt64: Int] = [:]
        let keys = (0..<40).map { _ in random.next() }
        for _ in 0..<300 {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            sketch.increment(key)
            counts[key, default: 0] += 1
        }
        for (key, count) in counts {
            #expect(sketch.frequency(key) >= min(15, count), "seed \(seed): key \(key) counted \(count)")
        }
        var single = FrequencySketch(capacity: 64)
        for expected in 1...20 {
            single.increment(42)
            #expect(single.frequency(42) == min(15, expected))
        }
        // Halving: after sampleSize additions (of other keys), 15 becomes at most 7.
        for index in 0..<(single.sampleSize - 20) { single.increment(UInt64(1_000 + index)) }
        #expect(single.frequency(42) <= 7)
    }
}
