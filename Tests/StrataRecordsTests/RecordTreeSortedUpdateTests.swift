import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport

/// `RecordTreeWriter.update(count:id:bytes:)` (a save's or a migration flush's updates, in id
/// order) against `update(_:bytes:)` one record at a time: the same records, leaves that fit
/// their pages, the same journal summary, the same answer for a record that does not exist.
@Suite struct RecordTreeSortedUpdateTests {
    /// New bytes for a record: mostly small, some that grow it to the largest inline size (so
    /// a leaf outgrows its page several times over), empty ones, and overflowed ones.
    static func newBytes(_ random: inout SeededRandom, inline: Int) -> [UInt8] {
        switch Int.random(in: 0..<20, using: &random) {
        case 0: return []
        case 1: return random.bytes(Int.random(in: (inline + 1)...900, using: &random))
        case 2...6: return random.recordLikeBytes(inline)
        default: return random.recordLikeBytes(Int.random(in: 1...100, using: &random))
        }
    }

    static func contents(_ log: PageLog) throws -> [(UInt64, [UInt8])] {
        let snapshot = try log.snapshot()
        let root = RecordTreeTests.loadRoot(try snapshot.read(RecordTreeTests.rootPage))
        var scanned: [(UInt64, [UInt8])] = []
        try RecordTreeReader(snapshot: snapshot, root: root, cache: NodeCache(budget: 64 << 10)).scan { id, bytes in
            scanned.append((id, Array(bytes)))
            return true
        }
        return scanned
    }

    /// Runs of updates in id order (random subsets: dense stretches, sparse ones, whole
    /// leaves), in several transactions, on a tree of small and overflowed records; the same
    /// updates record by record on a second tree. Both hold the model's records after each
    /// transaction, and every leaf of the first fits its page or holds one record.
    ///
    /// Seed 116 is one of those where a record growing to the largest inline size in the middle
    /// of a full leaf left a half of one split in halves past its page (per-record updates, and
    /// a sorted batch's leaf that holds an overflowed record); the split is now repeated.
    @Test(arguments: [16 << 10, 1 << 10], [UInt64(0x50E7), 116])
    func sortedUpdatesLeaveTheRecordsPerRecordUpdatesLeave(dirtyBudget: Int, defaultSeed: UInt64) throws {
        let seed = SeededRandom.seed(default: defaultSeed)
        print("sortedUpdatesLeaveTheRecordsPerRecordUpdatesLeave seed \(seed), dirty budget \(dirtyBudget)")
        var random = SeededRandom(seed: seed)
        var options = RecordTreeTests.tinyTree()
        options.dirtyBudget = dirtyBudget
        let inline = options.maximumInlineRecord
        let sortedLog = try RecordTreeBulkAppendTests.openLog(), perRecordLog = try RecordTreeBulkAppendTests.openLog()
        var model: [UInt64: [UInt8]] = [:]
        var id: UInt64 = 0
        for _ in 0..<3000 {
            id += UInt64.random(in: 1...3, using: &random)
            model[id] = Int.random(in: 0..<25, using: &random) == 0
                ? random.bytes(Int.random(in: (inline + 1)...700, using: &random)) : random.recordLikeBytes(Int.random(in: 1...60, using: &random))
        }
        let ids = model.keys.sorted()
        for log in [sortedLog, perRecordLog] {
            try RecordTreeBulkAppendTests.writeTree(log, options: options) { tree in for id in ids { try tree.insert(id, bytes: model[id] ?? []) } }
        }
        var grownLeaves = 0
        for round in 0..<12 {
            // Which records this round updates: every one of a stretch, or one in `gap`.
            var updates: [(id: UInt64, bytes: [UInt8])] = []
            var index = Int.random(in: 0..<50, using: &random)
            while index < ids.count {
                let stretch = Int.random(in: 1...200, using: &random), gap = Int.random(in: 1...4, using: &random)
                for at in stride(from: index, to: min(ids.count, index + stretch), by: gap) {
                    updates.append((ids[at], Self.newBytes(&random, inline: inline)))
                }
                index += stretch + Int.random(in: 0...300, using: &random)
            }
            try RecordTreeBulkAppendTests.writeTree(sortedLog, options: options) { tree in
                let missing = try tree.update(count: updates.count, id: { updates[$0].id }, bytes: { updates[$0].bytes })
                #expect(missing == nil, "round \(round)")
            }
            try RecordTreeBulkAppendTests.writeTree(perRecordLog, options: options) { tree in
                for update in updates { let updated = try tree.update(update.id, bytes: update.bytes); #expect(updated) }
            }
            for update in updates { model[update.id] = update.bytes }
            let expected = ids.map { ($0, model[$0] ?? []) }
            let sorted = try Self.contents(sortedLog)
            #expect(sorted.elementsEqual(expected) { $0.0 == $1.0 && $0.1 == $1.1 }, "round \(round): \(updates.count) updates")
            let perRecord = try Self.contents(perRecordLog)
            #expect(perRecord.elementsEqual(expected) { $0.0 == $1.0 && $0.1 == $1.1 })
            let snapshot = try sortedLog.snapshot()
            let root = RecordTreeTests.loadRoot(try snapshot.read(RecordTreeTests.rootPage))
            #expect(root.count == UInt64(ids.count))
            let leaves = try RecordTreeBulkAppendTests.nodes(snapshot, root: root.rootPageID).filter { $0.bytes.first == 1 }
            func oversized(_ leaves: [(pageID: UInt64, depth: Int, bytes: [UInt8])]) -> [UInt64] {
                leaves.filter { $0.bytes.count > options.maximumNodeSize && Int($0.bytes[2]) | Int($0.bytes[3]) << 8 > 1 }.map(\.pageID)
            }
            #expect(oversized(leaves).isEmpty, "round \(round): leaves \(oversized(leaves)) pass their page")
            let perRecordSnapshot = try perRecordLog.snapshot()
            let perRecordRoot = RecordTreeTests.loadRoot(try perRecordSnapshot.read(RecordTreeTests.rootPage))
            let perRecordLeaves = try RecordTreeBulkAppendTests.nodes(perRecordSnapshot, root: perRecordRoot.rootPageID).filter { $0.bytes.first == 1 }
            #expect(oversized(perRecordLeaves).isEmpty, "round \(round): per-record leaves \(oversized(perRecordLeaves)) pass their page")
            let misplaced = try Self.recordsOutsideTheirRange(snapshot, root: root.rootPageID)
            #expect(misplaced.isEmpty, "round \(round): records outside their leaf's range: \(misplaced.prefix(5))")
            let lookups = RecordTreeReader(snapshot: snapshot, root: root, cache: NodeCache(budget: 64 << 10))
            let lost = try ids.filter { try lookups.get($0) != model[$0] }
            #expect(lost.isEmpty, "round \(round): point lookups miss \(lost.prefix(5))")
            grownLeaves = max(grownLeaves, leaves.count)
        }
        // The records grew: leaves were split, some of them several times in one pass.
        print("sortedUpdatesLeaveTheRecordsPerRecordUpdatesLeave: up to \(grownLeaves) leaves")
        #expect(grownLeaves > 3000 / 8)
    }

    /// The ids of records lying outside the range their leaf's ancestors give it (each
    /// interior node's child i covers `firstIDs[i]` up to `firstIDs[i + 1]`, within the node's
    /// own range): a separator moved wrongly would hide them from point lookups.
    static func recordsOutsideTheirRange(_ snapshot: Snapshot, root: UInt64) throws -> [UInt64] {
        var outside: [UInt64] = []
        var pending: [(pageID: UInt64, low: UInt64, high: UInt64?)] = root == 0 ? [] : [(root, 0, nil)]
        func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
        while let (pageID, low, high) = pending.popLast() {
            let bytes = try #require(try snapshot.read(pageID)).bytes
            let count = Int(bytes[2]) | Int(bytes[3]) << 8
            if bytes.first == 1 {
                for index in 0..<count {
                    let id = u64(bytes, 8 + 12 * index)
                    if id < low || high.map({ id >= $0 }) ?? false { outside.append(id) }
                }
                continue
            }
            for index in 0..<count {
                let first = index == 0 ? low : u64(bytes, 8 + 16 * index)
                let next = index + 1 < count ? u64(bytes, 8 + 16 * (index + 1)) : high
                pending.append((u64(bytes, 8 + 16 * index + 8), first, next))
            }
        }
        return outside
    }

    /// Every record of a tree built in id order grows (a migration filling new attributes),
    /// in dense batches of updates: the leaves rebuilt are packed as a sequential build of the
    /// grown records packs them — not split in halves, which left about 1.6 leaves for each
    /// (every record of a leaf grown by a fifth: a full leaf and a fifth, split in two) —
    /// whether the records shrink afterwards or not, and records stay in their ranges.
    @Test(arguments: [16 << 10, 64 << 10])
    func recordsThatGrowLeaveFullLeaves(dirtyBudget: Int) throws {
        let seed = SeededRandom.seed(default: 0x50E9)
        print("recordsThatGrowLeaveFullLeaves seed \(seed), dirty budget \(dirtyBudget)")
        var random = SeededRandom(seed: seed)
        var options = RecordTreeTests.tinyTree()
        options.dirtyBudget = dirtyBudget
        let count: UInt64 = 4000
        var model: [UInt64: [UInt8]] = [:]
        for id in 1...count { model[id] = random.recordLikeBytes(Int.random(in: 20...40, using: &random)) }
        let log = try RecordTreeBulkAppendTests.openLog(), packed = try RecordTreeBulkAppendTests.openLog()
        try RecordTreeBulkAppendTests.writeTree(log, options: options) { tree in for id in 1...count { try tree.insert(id, bytes: model[id] ?? []) } }
        func leaves(_ log: PageLog) throws -> Int {
            let snapshot = try log.snapshot()
            let root = RecordTreeTests.loadRoot(try snapshot.read(RecordTreeTests.rootPage))
            #expect(try Self.recordsOutsideTheirRange(snapshot, root: root.rootPageID).isEmpty)
            return try RecordTreeBulkAppendTests.nodes(snapshot, root: root.rootPageID).filter { $0.bytes.first == 1 }.count
        }
        let before = try leaves(log)
        // Each record grows by a fifth to a half, in batches of 500 (ten transactions).
        var grown = model
        for id in 1...count { grown[id] = (model[id] ?? []) + random.recordLikeBytes(Int.random(in: 8...16, using: &random)) }
        for batch in stride(from: UInt64(1), through: count, by: 500) {
            let ids = Array(batch..<min(count + 1, batch + 500))
            try RecordTreeBulkAppendTests.writeTree(log, options: options) { tree throws in
                #expect(try tree.update(count: ids.count, id: { ids[$0] }, bytes: { grown[ids[$0]] ?? [] }) == nil)
            }
        }
        try RecordTreeBulkAppendTests.writeTree(packed, options: options) { tree in for id in 1...count { try tree.insert(id, bytes: grown[id] ?? []) } }
        let after = try leaves(log), sequential = try leaves(packed)
        print("recordsThatGrowLeaveFullLeaves: \(before) leaves, \(after) after growing (a sequential build: \(sequential))")
        #expect(after > before)
        // One leaf per batch may stay partly filled (the last a batch rebuilt), and one per
        // write of the modified nodes when the dirty budget is passed (a leaf written is not
        // filled again).
        #expect(after <= sequential + 10 + after * options.maximumNodeSize / dirtyBudget + 1,
                "\(after) leaves after growing, \(sequential) for a sequential build")
        let scanned = try Self.contents(log)
        #expect(scanned.elementsEqual((1...count).map { ($0, grown[$0] ?? []) }) { $0.0 == $1.0 && $0.1 == $1.1 })
        // Shrunk back in one batch: records move back into the leaves before them, none is lost.
        let all = Array(1...count)
        try RecordTreeBulkAppendTests.writeTree(log, options: options) { tree throws in
            #expect(try tree.update(count: all.count, id: { all[$0] }, bytes: { model[all[$0]] ?? [] }) == nil)
        }
        #expect(try leaves(log) <= after)
        #expect(try Self.contents(log).elementsEqual((1...count).map { ($0, model[$0] ?? []) }) { $0.0 == $1.0 && $0.1 == $1.1 })
    }

    /// A record that does not exist — among others of its leaf, past the tree's last id, alone:
    /// its id is returned and the records after it are not replaced.
    @Test func aMissingRecordIsNamed() throws {
        let log = try RecordTreeBulkAppendTests.openLog()
        let options = RecordTreeTests.tinyTree()
        try RecordTreeBulkAppendTests.writeTree(log, options: options) { tree in
            for id in stride(from: UInt64(2), through: 400, by: 2) { try tree.insert(id, bytes: [UInt8(id % 251)]) }
        }
        try RecordTreeBulkAppendTests.writeTree(log, options: options) { tree throws in
            let updates: [(UInt64, [UInt8])] = [(2, [1, 1]), (4, [2, 2]), (6, [3, 3]), (7, [9]), (8, [4])]
            let missing = try tree.update(count: updates.count, id: { updates[$0].0 }, bytes: { updates[$0].1 })
            #expect(missing == 7)
            #expect(try tree.get(8) == [8])  // after the missing one: not replaced
            let last: [(UInt64, [UInt8])] = [(398, [7]), (400, [8, 8, 8]), (401, [0])]
            let missingLast = try tree.update(count: last.count, id: { last[$0].0 }, bytes: { last[$0].1 })
            #expect(missingLast == 401)
            let after = try [398, 400, 401].map { try tree.get($0) }
            #expect(after == [[147], [149], nil])  // 398 % 251 and 400 % 251: its leaf is as it was
            let alone: [(UInt64, [UInt8])] = [(1, [5])]
            let missingAlone = try tree.update(count: 1, id: { alone[$0].0 }, bytes: { alone[$0].1 })
            #expect(missingAlone == 1)
        }
    }

    /// With a journal that summarizes (a migration closure's flushes), the counts of updated
    /// records — only those whose bytes changed — are those per-record updates give.
    @Test func sortedUpdatesSummarizeAsPerRecordUpdates() throws {
        let seed = SeededRandom.seed(default: 0x50E8)
        print("sortedUpdatesSummarizeAsPerRecordUpdates seed \(seed)")
        var random = SeededRandom(seed: seed)
        let options = RecordStoreTests.treeOptions()
        func store() throws -> RecordStore {
            RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                        treeOptions: options)
        }
        var records: [(id: UInt64, bytes: [UInt8])] = []
        for id in 1...2000 as ClosedRange<UInt64> { records.append((id, random.recordLikeBytes(Int.random(in: 1...80, using: &random)))) }
        var updates: [(id: UInt64, bytes: [UInt8])] = []
        var unchanged = 0
        for record in records where Int.random(in: 0..<3, using: &random) > 0 {
            if Int.random(in: 0..<5, using: &random) == 0 {
                updates.append(record)  // the same bytes: not counted
                unchanged += 1
            } else {
                updates.append((record.id, Self.newBytes(&random, inline: options.maximumInlineRecord)))
            }
        }
        var counts: [UInt64] = []
        for sorted in [true, false] {
            let store = try store()
            try store.write { transaction in
                let tree = transaction.tree(for: 1, schemaVersion: 1)
                for record in records { try tree.insert(record.id, bytes: record.bytes) }
            }
            try store.write { transaction in
                transaction.journal(author: "flush", timestamp: 1)
                transaction.history?.summarizes = true
                let tree = transaction.tree(for: 1, schemaVersion: 1)
                if sorted {
                    #expect(try tree.update(count: updates.count, id: { updates[$0].id }, bytes: { updates[$0].bytes }) == nil)
                } else {
                    for update in updates { let updated = try tree.update(update.id, bytes: update.bytes); #expect(updated) }
                }
                counts.append(transaction.history?.takeSummary().counts[1]?.updated ?? 0)
            }
            let expected = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0.bytes) }).merging(updates.map { ($0.id, $0.bytes) }) { $1 }
            #expect(try RecordStoreTests.contents(store) == [1: expected])
        }
        #expect(counts.count == 2)
        #expect(counts.first == counts.last)
        let old = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0.bytes) })
        let changed = updates.filter { old[$0.id] != $0.bytes }.count
        #expect(unchanged > 0)
        #expect(counts.first == UInt64(changed))
    }
}
