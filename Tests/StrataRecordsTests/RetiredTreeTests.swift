import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport

/// A tree a migration replaced is freed in bounded batches — leaves in key order, then the
/// interior nodes — every page exactly once, resumable after a reopen between batches.
@Suite struct RetiredTreeTests {
    static func open(_ fs: MemoryFileSystem) throws -> RecordStore {
        RecordStore(log: try PageLog.open(directory: "/store", fileSystem: fs, options: RecordStoreTests.options()),
                    treeOptions: RecordStoreTests.treeOptions())
    }

    @Test func retiredTreesAreFreedInBatchesAcrossReopens() throws {
        let seed = SeededRandom.seed(default: 0x7E7)
        print("RetiredTreeTests seed \(seed)")
        var random = SeededRandom(seed: seed)
        for (round, (leavesPerBatch, overflowed)) in [(1, true), (3, true), (50, true), (10_000, true), (3, false), (10_000, false)].enumerated() {
            let fs = MemoryFileSystem()
            var store = try Self.open(fs)
            // Entity 1 (kept) and entity 2 (to retire): deep trees with overflowed records.
            try store.write { records in
                for id in 1...400 as ClosedRange<UInt64> {
                    try records.tree(for: 1, schemaVersion: 1).insert(id, bytes: random.bytes(20 + Int(random.next() % 60)))
                    let size = overflowed && random.next() % 10 == 0 ? 700 + Int(random.next() % 900) : 30 + Int(random.next() % 120)
                    try records.tree(for: 2, schemaVersion: 1).insert(id * 3, bytes: random.bytes(size))
                }
            }
            let kept = try RecordStoreTests.contents(store)[1]
            let before = store.log.statistics.pageCount
            // Pages of entity 1 and the root only: what must remain.
            let withoutTwo: Int = try {
                let probe = MemoryFileSystem()
                let other = try Self.open(probe)
                try other.write { records in
                    for (id, bytes) in (kept ?? [:]).sorted(by: { $0.key < $1.key }) { try records.tree(for: 1, schemaVersion: 1).insert(id, bytes: bytes) }
                }
                return other.log.statistics.pageCount
            }()
            #expect(before > withoutTwo + 50, "entity 2 spans many pages (round \(round))")

            let retiredRoot = try store.snapshot().root.entities[2]?.tree.rootPageID ?? 0
            try store.write { records in
                records.beginMigration(fromCatalogVersion: 1, stage: 0, targetChecksum: [UInt8](repeating: 0, count: 32))
                let tree = try #require(try records.retire(records.snapshotRoot(of: 2)))
                records.updateMigration { $0.retired = [tree] }
                records.forgetEntity(2)
            }
            var batches = 0
            // A tree without overflowed records may be declared so: its leaves are freed unread
            // (until a reopen forgets it, as a resumed migration does), to the same end.
            var withoutOverflow: Set<UInt64> = overflowed ? [] : [retiredRoot]
            while try !store.write({ try $0.freeRetiredTrees(maximumLeaves: leavesPerBatch, withoutOverflow: withoutOverflow) }) {
                batches += 1
                if batches % 4 == 0 {  // a reopen between batches: the marker carries the progress
                    try store.log.close()
                    store = try Self.open(fs)
                    withoutOverflow = []
                }
                #expect(batches < 10_000)
            }
            try store.write { $0.endMigration() }
            #expect(store.log.statistics.pageCount == withoutTwo, "round \(round): \(store.log.statistics.pageCount) pages left, \(withoutTwo) expected")
            #expect(try RecordStoreTests.contents(store)[1] == kept)
            #expect(leavesPerBatch > 10 || batches > 10, "round \(round): \(batches) batches")
            try store.log.close()
        }
    }
}
