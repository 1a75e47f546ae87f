import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataTestSupport

/// `WrittenNodes`: the nodes a commit wrote, which the next write transactions change without
/// reading them back — only while the page's image is the one written (its LSN), and never
/// with anything an uncommitted transaction did to them.
@Suite struct WrittenNodesTests {
    static func record(_ number: Int, _ round: Int) -> [UInt8] {
        RecordCodec.encode([1: .string("record \(number) round \(round)"), 2: .int(Int64(round))])
    }

    /// Small commits one after another, each changing a record of the same few leaves and
    /// journaling it, read nothing from the log: the root, the leaves and the journal's leaf
    /// come from the commit before. What they wrote is what a fresh store reads back.
    @Test func smallCommitsReadNothingBack() throws {
        let seed = SeededRandom.seed(default: 0x57_17E)
        print("smallCommitsReadNothingBack seed \(seed)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: RecordStoreTests.options()),
                                treeOptions: RecordStoreTests.treeOptions())
        var model: [UInt64: [UInt8]] = [:]
        try store.write { transaction in
            _ = transaction.journal(author: nil, timestamp: 1)
            let tree = transaction.tree(for: 1, schemaVersion: 1)
            for number in 1...12 {
                let id = transaction.allocateRowID(for: 1)
                try tree.insert(id, bytes: Self.record(number, 0))
                model[id] = Self.record(number, 0)
            }
        }
        #expect(store.writtenNodes.count > 1)
        let readBefore = fs.bytesRead
        for round in 1...60 {
            let id = UInt64.random(in: 1...12, using: &random)
            try store.write { transaction in
                _ = transaction.journal(author: nil, timestamp: Int64(round + 1))
                let updated = try transaction.tree(for: 1, schemaVersion: 1).update(id, bytes: Self.record(Int(id), round))
                #expect(updated)
            }
            model[id] = Self.record(Int(id), round)
        }
        #expect(fs.bytesRead == readBefore, "the commits read \(fs.bytesRead - readBefore) bytes")
        #expect(try RecordStoreTests.contents(store) == [1: model])
        var updates = 0
        try store.snapshot().historyEntries(after: 1, through: .max, backward: false) { entry in
            updates += entry.operations.count { if case .update = $0 { true } else { false } }
            return true
        }
        #expect(updates == 60)
        try store.log.close()
        let reopened = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: RecordStoreTests.options()),
                                   treeOptions: RecordStoreTests.treeOptions())
        #expect(try RecordStoreTests.contents(reopened) == [1: model])
    }

    /// A transaction that changed a node taken from `WrittenNodes` and then failed leaves the
    /// node as committed: the next transaction changes the committed record, not the failed
    /// one's.
    @Test func aFailedTransactionLeavesTheNodesAsCommitted() throws {
        struct Failure: Error {}
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                                treeOptions: RecordStoreTests.treeOptions())
        try store.write { transaction in
            let tree = transaction.tree(for: 1, schemaVersion: 1)
            for number in 1...5 { try tree.insert(transaction.allocateRowID(for: 1), bytes: Self.record(number, 0)) }
        }
        #expect(throws: Failure.self) {
            try store.write { transaction in
                let tree = transaction.tree(for: 1, schemaVersion: 1)
                let updated = try tree.update(1, bytes: Self.record(1, 99))
                #expect(updated)
                try tree.delete(2)
                try tree.insert(transaction.allocateRowID(for: 1), bytes: Self.record(6, 99))
                throw Failure()
            }
        }
        try store.write { transaction in
            let updated = try transaction.tree(for: 1, schemaVersion: 1).update(3, bytes: Self.record(3, 1))
            #expect(updated)
        }
        let expected: [UInt64: [UInt8]] = [1: Self.record(1, 0), 2: Self.record(2, 0), 3: Self.record(3, 1), 4: Self.record(4, 0),
                                           5: Self.record(5, 0)]
        #expect(try RecordStoreTests.contents(store) == [1: expected])
    }

    /// Two record stores on one log, each with its own `WrittenNodes` and decoded root: after
    /// the other one committed, a store's kept nodes and root are of an older LSN than the
    /// pages' and are not used — each sees the other's changes.
    @Test func nodesOfAnOlderImageAreNotUsed() throws {
        let log = try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options())
        let first = RecordStore(log: log, treeOptions: RecordStoreTests.treeOptions())
        let second = RecordStore(log: log, treeOptions: RecordStoreTests.treeOptions())
        var model: [UInt64: [UInt8]] = [:]
        for round in 0..<6 {
            for store in [first, second] {
                try store.write { transaction in
                    _ = transaction.journal(author: nil, timestamp: Int64(round))
                    let tree = transaction.tree(for: 1, schemaVersion: 1)
                    let id = transaction.allocateRowID(for: 1)
                    try tree.insert(id, bytes: Self.record(Int(id), round))
                    model[id] = Self.record(Int(id), round)
                    if id > 1 {
                        let updated = try tree.update(id - 1, bytes: Self.record(Int(id - 1), round + 100))
                        #expect(updated)
                        model[id - 1] = Self.record(Int(id - 1), round + 100)
                    }
                }
            }
        }
        #expect(try RecordStoreTests.contents(first) == [1: model])
        var entries = 0
        try first.snapshot().historyEntries(after: 0, through: .max, backward: false) { _ in entries += 1; return true }
        #expect(entries == 12)
    }
}
