import Testing
import StrataFormat
import StrataIO
import StrataTestSupport
@testable import StrataPageLog
@testable import StrataRecords

/// Regression tests of what the fuzz campaigns found (`fuzzFinding<N>_<what>`); the first is
/// in StoreFileFuzzTests.swift.
@Suite struct FuzzFindingTests {
    /// Found by the store-file campaign (forged pages): a stored structure naming a page never
    /// allocated — here an overflowed record's chunk — made deleting the record throw
    /// `invalidPageID` (in the public API `StrataError.invalidPageID`, an error about the
    /// caller's page ids, without file or reason) instead of corruption. Found again (finding 3)
    /// with a forged id beyond the page id space (2^31 and more), which the fix had left out.
    @Test(arguments: [UInt64(1) << 20, UInt64(1) << 43 | 0x1B])
    func fuzzFinding2_unallocatedPageInAStoredStructureIsCorruption(forgedID: UInt64) throws {
        var options = PageLogOptions()
        options.automaticCompaction = false
        var treeOptions = RecordTreeOptions()
        treeOptions.maximumInlineRecord = 200
        treeOptions.overflowChunkSize = 400
        let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem(), options: options)
        defer { try? log.close() }
        let store = RecordStore(log: log, treeOptions: treeOptions)
        let id = try store.write { records in
            let id = records.allocateRowID(for: 1)
            try records.tree(for: 1, schemaVersion: 1).insert(id, bytes: [UInt8](repeating: 7, count: 1_000))  // overflowed
            return id
        }
        // The leaf (the tree's root) forged: the record's overflow reference names a chunk past
        // every allocated page id.
        let snapshot = try store.snapshot()
        let leafID = try #require(snapshot.root.entities[1]?.tree.rootPageID)
        let page = try #require(try log.snapshot().read(leafID))
        var leaf = try LeafNode.decode(page.bytes)
        #expect(leaf.count == 1 && leaf.isOverflow(0))
        var reference = try Array(leaf.bytes(0)).withUnsafeBytes { try OverflowReference.decode($0) }
        reference.chunks[reference.chunks.count - 1] = forgedID
        leaf = LeafNode()
        leaf.insert(id, bytes: reference.encoded(), overflow: true, at: 0)
        try log.write { try $0.write(leafID, entityID: page.entityID, schemaVersion: page.schemaVersion, bytes: leaf.encoded()) }

        do {
            try store.write { _ = try $0.tree(for: 1, schemaVersion: 1).delete(id) }
            Issue.record("deleting a record whose chunk was never allocated succeeded")
        } catch RecordTreeError.corruptNode(let pageID, let reason) {
            #expect(pageID == forgedID)
            #expect(reason.contains("never allocated"))
        }
        // Nothing was committed: the record still reads until its forged chunk.
        #expect(try store.snapshot().root.entities[1]?.tree.count == 1)
    }
}
