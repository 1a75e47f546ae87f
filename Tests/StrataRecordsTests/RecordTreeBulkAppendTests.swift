import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport

/// `RecordTreeWriter.insert(ids:bytes:start:ends:)` (a migration's bulk append) against
/// `insert(_:raw:)` one record at a time: the same records in the same leaves, byte for byte,
/// the same errors, the same journal.
@Suite struct RecordTreeBulkAppendTests {
    /// Records in the order they are inserted: ids ascending with gaps, except about 2 % held
    /// back and inserted later (below the tree's last id); empty, small, the largest inline,
    /// the smallest overflowed and larger overflowed records.
    static func records(_ random: inout SeededRandom, count: Int, inline: Int) -> [(id: UInt64, bytes: [UInt8])] {
        var order: [(id: UInt64, bytes: [UInt8])] = []
        var held: [(id: UInt64, bytes: [UInt8])] = []
        var id: UInt64 = 0
        for _ in 0..<count {
            id += UInt64.random(in: 1...3, using: &random)
            let bytes: [UInt8]
            switch Int.random(in: 0..<20, using: &random) {
            case 0: bytes = []
            case 1: bytes = random.bytes(Int.random(in: (inline + 1)...1500, using: &random))
            case 2: bytes = random.recordLikeBytes(inline)
            case 3: bytes = random.recordLikeBytes(inline + 1)
            default: bytes = random.recordLikeBytes(Int.random(in: 1...120, using: &random))
            }
            if Int.random(in: 0..<50, using: &random) == 0 { held.append((id, bytes)) } else { order.append((id, bytes)) }
            if !held.isEmpty && Int.random(in: 0..<40, using: &random) == 0 { order.append(held.removeFirst()) }
        }
        return order + held
    }

    /// Consecutive ranges of `count` records, of random sizes: one transaction each.
    static func batches(_ random: inout SeededRandom, count: Int) -> [Range<Int>] {
        var batches: [Range<Int>] = []
        var start = 0
        while start < count {
            let end = min(count, start + Int.random(in: 1...700, using: &random))
            batches.append(start..<end)
            start = end
        }
        return batches
    }

    /// Inserts `records` with `tree.insert(ids:bytes:start:ends:)` in runs of random sizes, their
    /// bytes back to back after a few unrelated ones. With `duplicates`, now and then a run has
    /// a duplicate of an id inserted before spliced in: the records before it go in, it throws
    /// `duplicateID`, the records after it do not (they come with the next run). Returns the
    /// number of duplicates refused.
    static func insertInRuns(_ records: ArraySlice<(id: UInt64, bytes: [UInt8])>, into tree: RecordTreeWriter,
                             duplicates: Bool = true, random: inout SeededRandom) throws -> Int {
        var bytes = random.bytes(Int.random(in: 0...16, using: &random))
        let base = bytes.count
        var ids: [UInt64] = [], ends: [Int] = []
        for record in records {
            ids.append(record.id)
            bytes += record.bytes
            ends.append(bytes.count)
        }
        var refused = 0
        try bytes.withUnsafeBytes { bytes in
            var index = 0
            while index < ids.count {
                let end = min(ids.count, index + Int.random(in: 1...90, using: &random))
                let start = index == 0 ? base : ends[index - 1]
                let cut = Int.random(in: index..<end, using: &random)
                if duplicates && cut > 0 && Int.random(in: 0..<8, using: &random) == 0 {
                    // Empty, as a duplicate that overflowed would allocate overflow pages first.
                    let duplicate = ids[Int.random(in: 0..<cut, using: &random)]
                    let runIDs = Array(ids[index..<cut]) + [duplicate] + Array(ids[cut..<end])
                    let duplicateEnd = cut == index ? start : ends[cut - 1]
                    let runEnds = Array(ends[index..<cut]) + [duplicateEnd] + Array(ends[cut..<end])
                    #expect(throws: RecordTreeError.duplicateID(duplicate)) {
                        try runIDs.withUnsafeBufferPointer { runIDs in
                            try runEnds.withUnsafeBufferPointer { runEnds in
                                try tree.insert(ids: runIDs, bytes: bytes, start: start, ends: runEnds)
                            }
                        }
                    }
                    refused += 1
                    index = cut
                    continue
                }
                try ids.withUnsafeBufferPointer { ids in
                    try ends.withUnsafeBufferPointer { ends in
                        try tree.insert(ids: UnsafeBufferPointer(rebasing: ids[index..<end]), bytes: bytes, start: start,
                                        ends: UnsafeBufferPointer(rebasing: ends[index..<end]))
                    }
                }
                index = end
            }
        }
        return refused
    }

    /// Every node of a tree, depth first from the root: its page id, depth and page bytes.
    static func nodes(_ snapshot: Snapshot, root: UInt64) throws -> [(pageID: UInt64, depth: Int, bytes: [UInt8])] {
        var nodes: [(pageID: UInt64, depth: Int, bytes: [UInt8])] = []
        var pending: [(UInt64, Int)] = root == 0 ? [] : [(root, 1)]
        while let (pageID, depth) = pending.popLast() {
            let bytes = try #require(try snapshot.read(pageID)).bytes
            nodes.append((pageID, depth, bytes))
            guard bytes.first == 2 else { continue }  // a leaf
            // Interior: `kind, version, count:u16, reserved:u32`, then (first id, child) pairs.
            try #require(bytes.count >= 8)
            let count = Int(bytes[2]) | Int(bytes[3]) << 8
            try #require(bytes.count == 8 + 16 * count)
            for index in (0..<count).reversed() {
                let offset = 8 + 16 * index + 8
                let child = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
                pending.append((child, depth + 1))
            }
        }
        return nodes
    }

    static func openLog() throws -> PageLog {
        var options = PageLogOptions()
        options.segmentSize = 256 << 10
        options.automaticCompaction = false
        return try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem(), options: options)
    }

    /// One transaction of `log` changing its tree (entity 5, root at `RecordTreeTests.rootPage`)
    /// through `body`.
    static func writeTree(_ log: PageLog, options: RecordTreeOptions, _ body: (RecordTreeWriter) throws -> Void) throws {
        try log.write(durability: .relaxed) { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: RecordTreeTests.loadRoot(try transaction.read(RecordTreeTests.rootPage)),
                                        entityID: 5, schemaVersion: 1, options: options)
            try body(tree)
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
    }

    /// Two trees from the same records in the same transactions, one inserted record by record,
    /// one in bulk runs: every node page (leaves and interior nodes, same page ids) is the same,
    /// byte for byte. With a small dirty budget too, so modified nodes are written early.
    @Test(arguments: [16 << 10, 1 << 10])
    func bulkAppendsBuildTheLeavesPerRecordInsertsBuild(dirtyBudget: Int) throws {
        let seed = SeededRandom.seed(default: 0xB0A7)
        print("bulkAppendsBuildTheLeavesPerRecordInsertsBuild seed \(seed), dirty budget \(dirtyBudget)")
        var random = SeededRandom(seed: seed)
        var options = RecordTreeTests.tinyTree()
        options.dirtyBudget = dirtyBudget
        let records = Self.records(&random, count: 6000, inline: options.maximumInlineRecord)
        let perRecordLog = try Self.openLog(), bulkLog = try Self.openLog()
        var duplicates = 0
        for batch in Self.batches(&random, count: records.count) {
            try Self.writeTree(perRecordLog, options: options) { tree in
                for record in records[batch] { try record.bytes.withUnsafeBytes { try tree.insert(record.id, raw: $0) } }
            }
            try Self.writeTree(bulkLog, options: options) { tree in
                duplicates += try Self.insertInRuns(records[batch], into: tree, random: &random)
            }
        }
        let perRecord = try perRecordLog.snapshot(), bulk = try bulkLog.snapshot()
        let perRecordRoot = RecordTreeTests.loadRoot(try perRecord.read(RecordTreeTests.rootPage))
        let bulkRoot = RecordTreeTests.loadRoot(try bulk.read(RecordTreeTests.rootPage))
        #expect(bulkRoot == perRecordRoot)
        #expect(bulkRoot.count == UInt64(records.count))
        let perRecordNodes = try Self.nodes(perRecord, root: perRecordRoot.rootPageID)
        let bulkNodes = try Self.nodes(bulk, root: bulkRoot.rootPageID)
        #expect(bulkNodes.count == perRecordNodes.count)
        let differing = zip(bulkNodes, perRecordNodes).filter { $0.pageID != $1.pageID || $0.bytes != $1.bytes }.map(\.0.pageID)
        #expect(differing.isEmpty, "\(differing.count) nodes differ, the first at pages \(differing.prefix(5))")
        let leaves = bulkNodes.filter { $0.bytes.first == 1 }
        print("bulkAppendsBuildTheLeavesPerRecordInsertsBuild: \(leaves.count) leaves, \(bulkNodes.count - leaves.count) interior nodes, "
              + "\(bulkNodes.map(\.depth).max() ?? 0) levels, \(duplicates) duplicates refused")
        #expect(bulkNodes.map(\.depth).max() ?? 0 >= 3)
        #expect(duplicates > 10)
        // And the records themselves, overflowed ones assembled from their chunk pages.
        let reader = RecordTreeReader(snapshot: bulk, root: bulkRoot, cache: NodeCache(budget: 64 << 10))
        var scanned: [(UInt64, [UInt8])] = []
        try reader.scan { id, bytes in scanned.append((id, Array(bytes))); return true }
        let expected = records.sorted { $0.id < $1.id }
        #expect(scanned.count == expected.count)
        #expect(scanned.elementsEqual(expected) { $0.0 == $1.id && $0.1 == $1.bytes })
    }

    /// The first records of an empty tree, duplicates of one another within a run, and an id
    /// below the last: each as `insert(_:raw:)` would have it.
    @Test func bulkAppendsFallBackToPerRecordInserts() throws {
        let log = try Self.openLog()
        try log.write(durability: .relaxed) { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 5, schemaVersion: 1, options: RecordTreeTests.tinyTree())
            let bytes: [UInt8] = Array(0..<30)
            func insert(_ ids: [UInt64], _ ends: [Int], start: Int = 0) throws {
                try ids.withUnsafeBufferPointer { ids in
                    try ends.withUnsafeBufferPointer { ends in
                        try bytes.withUnsafeBytes { try tree.insert(ids: ids, bytes: $0, start: start, ends: ends) }
                    }
                }
            }
            try insert([10, 11], [3, 5])  // an empty tree
            #expect(throws: RecordTreeError.duplicateID(13)) { try insert([12, 13, 13, 14], [6, 7, 8, 9], start: 5) }
            #expect(try tree.get(12) == [5])
            #expect(try tree.get(13) == [6])
            #expect(try tree.get(14) == nil)
            #expect(throws: RecordTreeError.duplicateID(10)) { try insert([10], [1]) }
            try insert([5, 20], [10, 12], start: 8)  // below the last id, then above
            #expect(try tree.get(5) == [8, 9])
            #expect(try tree.get(20) == [10, 11])
            // Ends that do not fit the bytes, or do not match the ids, are refused.
            #expect(throws: RecordTreeError.self) { try insert([30], [31]) }
            #expect(throws: RecordTreeError.self) { try insert([30], [3], start: 4) }
            #expect(throws: RecordTreeError.self) { try insert([30, 31], [3]) }
            #expect(try tree.get(30) == nil)
            #expect(try tree.finish().count == 6)
        }
    }

    /// A tree with a journal: a bulk append tells it of each insert as per-record inserts do,
    /// so the history entries are the same. (No duplicates: an insert that throws tells the
    /// journal first, and its transaction is meant to fail with it.)
    @Test func bulkAppendsJournalAsPerRecordInserts() throws {
        let seed = SeededRandom.seed(default: 0xB0A8)
        print("bulkAppendsJournalAsPerRecordInserts seed \(seed)")
        var random = SeededRandom(seed: seed)
        let options = RecordStoreTests.treeOptions()
        let records = Self.records(&random, count: 1500, inline: options.maximumInlineRecord)
        func store() throws -> RecordStore {
            RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                        treeOptions: options)
        }
        let perRecordStore = try store(), bulkStore = try store()
        for (number, batch) in Self.batches(&random, count: records.count).enumerated() {
            try perRecordStore.write { transaction in
                transaction.journal(author: "bulk", timestamp: Int64(number))
                let tree = transaction.tree(for: 1, schemaVersion: 1)
                for record in records[batch] { try record.bytes.withUnsafeBytes { try tree.insert(record.id, raw: $0) } }
            }
            try bulkStore.write { transaction in
                transaction.journal(author: "bulk", timestamp: Int64(number))
                let tree = transaction.tree(for: 1, schemaVersion: 1)
                _ = try Self.insertInRuns(records[batch], into: tree, duplicates: false, random: &random)
            }
        }
        func entries(_ store: RecordStore) throws -> [HistoryEntry] {
            var entries: [HistoryEntry] = []
            try store.snapshot().historyEntries(after: 0, through: .max, backward: false) { entries.append($0); return true }
            return entries
        }
        let perRecordEntries = try entries(perRecordStore)
        #expect(perRecordEntries.count > 1)
        #expect(try entries(bulkStore) == perRecordEntries)
        #expect(try RecordStoreTests.contents(bulkStore) == RecordStoreTests.contents(perRecordStore))
    }
}
