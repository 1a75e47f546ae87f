import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport

/// `RecordStore.verify`'s check of each leaf's range: a record outside the range its leaf's
/// ancestors give it is seen by scans (in order) and missed by point lookups — a separator
/// written wrongly (`RecordTreeWriter.raiseSeparator`) would do that.
@Suite struct RecordTreeVerifyTests {
    @Test func aRecordOutsideItsLeafsRangeIsReported() throws {
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                                treeOptions: RecordStoreTests.treeOptions())
        try store.write { transaction in
            let tree = transaction.tree(for: 1, schemaVersion: 1)
            for id in 1...400 as ClosedRange<UInt64> { try tree.insert(id, bytes: [UInt8](repeating: UInt8(id % 251), count: 30)) }
        }
        func outside(_ store: RecordStore) throws -> [StoreProblem] {
            store.verify(try store.snapshot()).problems.filter { $0.what.contains("outside the range") }
        }
        #expect(try outside(store).isEmpty)
        // The root, an interior node: `kind, version, count:u16, reserved:u32`, then
        // (first id, child) pairs. Child 1's first id raised by two: its first two records now
        // lie below its range.
        let rootPageID = try #require(try store.snapshot().root.entities[1]?.tree.rootPageID)
        var root = try #require(try store.log.snapshot().read(rootPageID)).bytes
        try #require(root.first == 2 && (Int(root[2]) | Int(root[3]) << 8) >= 2)
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(root[at + $1]) << (8 * UInt64($1)) } }
        let first = u64(8 + 16), leaf = u64(8 + 16 + 8)
        for byte in 0..<8 { root[8 + 16 + byte] = UInt8(truncatingIfNeeded: (first + 2) >> (8 * UInt64(byte))) }
        try store.log.write { try $0.write(rootPageID, bytes: root) }
        let problems = try outside(store)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.what.contains("leaf \(leaf) holds records \(first)–") == true, "\(problems)")
        #expect(try store.snapshot().reader(for: 1).get(first) == nil)  // what a point lookup now misses
    }
}
