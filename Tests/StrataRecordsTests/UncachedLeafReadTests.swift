import Testing
import StrataIO
import StrataPageLog
import StrataRecords
import StrataTestSupport

/// Point lookups that miss the node cache read a leaf only up to the record they need and
/// cache it on its second miss (`NodeCache.probe`): the bytes are exactly those of a full
/// read, over seeded random trees (ids with gaps, so the guess of where a record ends is often
/// wrong; overflowed records; absent ids), and a malformed leaf is a typed error on every path.
@Suite struct UncachedLeafReadTests {
    static let rootPage: UInt64 = 1

    @Test func uncachedLookupsReturnExactlyTheStoredRecords() throws {
        let seed = SeededRandom.seed(default: 0x1EAF)
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        var options = PageLogOptions()
        options.automaticCompaction = false
        let log = try PageLog.open(directory: "/store", fileSystem: fs, options: options)
        var treeOptions = RecordTreeOptions()
        treeOptions.maximumInlineRecord = 400
        treeOptions.overflowChunkSize = 1000
        var model: [UInt64: [UInt8]] = [:]
        var nextID: UInt64 = 1
        try log.write(durability: .relaxed) { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 3, schemaVersion: 1, options: treeOptions)
            for _ in 0..<3000 {
                // Dense runs and gaps, records of varied sizes (some overflowed, some empty).
                nextID += Bool.random(using: &random) ? 1 : UInt64.random(in: 2...40, using: &random)
                let size = [0, Int.random(in: 1...30, using: &random), Int.random(in: 60...140, using: &random),
                            Int.random(in: 401...1500, using: &random)][Int.random(in: 0..<4, using: &random)]
                let bytes = random.recordLikeBytes(size)
                try tree.insert(nextID, bytes: bytes)
                model[nextID] = bytes
            }
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
        let snapshot = try log.snapshot()
        let root = RecordTreeTests.loadRoot(try snapshot.read(Self.rootPage))
        let shared = NodeCache(budget: 1 << 20)
        for _ in 0..<2000 {
            let id = UInt64.random(in: 0...(nextID + 3), using: &random)
            // A fresh cache: every leaf is read uncached (first miss).
            let fresh = RecordTreeReader(snapshot: snapshot, root: root, cache: NodeCache(budget: 1 << 20))
            #expect(try fresh.get(id) == model[id], "seed \(seed) id \(id), uncached")
            // A shared cache: first miss, second miss (admitted), then a hit — the same bytes each time.
            let reader = RecordTreeReader(snapshot: snapshot, root: root, cache: shared)
            for attempt in 0..<3 { #expect(try reader.get(id) == model[id], "seed \(seed) id \(id), attempt \(attempt)") }
        }
    }

    @Test func aPageIsCachedOnItsSecondMiss() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: "/store", fileSystem: fs)
        try log.write { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 3, schemaVersion: 1, options: RecordTreeOptions())
            for id in UInt64(1)...10 { try tree.insert(id, bytes: Array(repeating: UInt8(id), count: 50)) }
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
        let snapshot = try log.snapshot()
        let root = RecordTreeTests.loadRoot(try snapshot.read(Self.rootPage))
        let cache = NodeCache()
        let reader = RecordTreeReader(snapshot: snapshot, root: root, cache: cache)
        let lsn = try snapshot.location(of: root.rootPageID).lsn
        #expect(try reader.get(4) == Array(repeating: 4, count: 50))
        #expect(!cache.contains(pageID: root.rootPageID, lsn: lsn))  // first miss: read in part, not cached
        #expect(try reader.get(7) == Array(repeating: 7, count: 50))
        #expect(cache.contains(pageID: root.rootPageID, lsn: lsn))  // second miss: cached
        guard case .hit = try cache.probe(root.rootPageID, in: snapshot) else {
            Issue.record("a cached page is a hit")
            return
        }
    }

    /// Once the cache is full, a page is admitted only when it was looked up more often lately
    /// than the page it would evict (TinyLFU): a leaf missed twice does not push out leaves
    /// looked up many times, and a leaf that keeps being looked up gets in.
    @Test func aFullCacheAdmitsOnlyPagesLookedUpMoreThanItsVictim() throws {
        let log = try PageLog.open(directory: "/store", fileSystem: MemoryFileSystem())
        try log.write { transaction in
            let tree = RecordTreeWriter(transaction: transaction, root: .empty, entityID: 3, schemaVersion: 1, options: RecordTreeOptions())
            for id in UInt64(1)...2_000 { try tree.insert(id, bytes: Array(repeating: UInt8(truncatingIfNeeded: id), count: 100)) }
            try RecordTreeTests.saveRoot(try tree.finish(), in: transaction)
        }
        let snapshot = try log.snapshot()
        let root = RecordTreeTests.loadRoot(try snapshot.read(Self.rootPage))
        // The leaves, from the root interior node: (first id, page id) entries after an
        // 8-byte header.
        let rootBytes = try #require(try snapshot.read(root.rootPageID)?.bytes)
        try #require(rootBytes.first == 2, "the root is an interior node")
        let leaves: [(firstID: UInt64, pageID: UInt64)] = rootBytes.withUnsafeBytes { raw in
            let count = Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
            return (0..<count).map { index in
                (max(1, UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8 + 16 * index, as: UInt64.self))),
                 UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16 + 16 * index, as: UInt64.self)))
            }
        }
        try #require(leaves.count >= 20)
        // Room for the root and six leaves.
        let leafBytes = try (0..<6).map { try #require(try snapshot.read(leaves[$0].pageID)?.bytes.count) }
        let cache = NodeCache(budget: rootBytes.count + leafBytes.reduce(0, +))
        let lsns = Dictionary(uniqueKeysWithValues: try leaves.map { ($0.pageID, try snapshot.location(of: $0.pageID).lsn) })
        func cached(_ leaf: (firstID: UInt64, pageID: UInt64)) -> Bool { cache.contains(pageID: leaf.pageID, lsn: lsns[leaf.pageID] ?? 0) }
        let reader = RecordTreeReader(snapshot: snapshot, root: root, cache: cache)
        for _ in 0..<12 { for leaf in leaves[0..<6] { _ = try reader.get(leaf.firstID) } }
        #expect(leaves[0..<6].allSatisfy(cached), "six hot leaves fill the cache")
        let cold = leaves[12]
        #expect(try reader.get(cold.firstID) == Array(repeating: UInt8(truncatingIfNeeded: cold.firstID), count: 100))
        #expect(try reader.get(cold.firstID) == Array(repeating: UInt8(truncatingIfNeeded: cold.firstID), count: 100))
        #expect(!cached(cold), "a leaf missed twice evicted a leaf looked up twelve times")
        #expect(leaves[0..<6].allSatisfy(cached))
        for _ in 0..<40 where !cached(cold) { _ = try reader.get(cold.firstID) }
        #expect(cached(cold), "a leaf looked up more than the others is admitted")
        #expect(leaves[0..<6].filter(cached).count == 5, "one hot leaf made room")
    }

    /// Leaves with a valid frame (checksum and all) but malformed contents.
    static func malformedLeaves() -> [(String, [UInt8])] {
        func leaf(count: UInt16, entries: [(UInt64, UInt32)], data: Int) -> [UInt8] {
            var bytes: [UInt8] = [1, 1]
            withUnsafeBytes(of: count.littleEndian) { bytes.append(contentsOf: $0) }
            bytes += [0, 0, 0, 0]
            for (id, end) in entries {
                withUnsafeBytes(of: id.littleEndian) { bytes.append(contentsOf: $0) }
                withUnsafeBytes(of: end.littleEndian) { bytes.append(contentsOf: $0) }
            }
            return bytes + Array(repeating: 0x41, count: data)
        }
        return [
            ("ids not ascending", leaf(count: 3, entries: [(5, 10), (4, 20), (6, 30)], data: 30)),
            ("end out of bounds", leaf(count: 3, entries: [(4, 10), (5, 20), (6, 3000)], data: 30)),
            ("ends descending", leaf(count: 3, entries: [(4, 20), (5, 10), (6, 30)], data: 30)),
            ("bytes after the last record", leaf(count: 2, entries: [(4, 10), (5, 20)], data: 30)),
            ("directory cut short", leaf(count: 300, entries: [(4, 10), (5, 20)], data: 30)),
            ("count past a tiny page", Array(leaf(count: 2, entries: [], data: 0)[0..<6])),
            ("unknown version", [1, 9, 0, 0, 0, 0, 0, 0]),
            ("unknown kind", [7, 1, 0, 0, 0, 0, 0, 0]),
            ("empty page", []),
        ]
    }

    @Test func malformedLeavesAreTypedErrorsCachedOrNot() throws {
        for compress in [true, false] {
            for (name, bytes) in Self.malformedLeaves() {
                let fs = MemoryFileSystem()
                let log = try PageLog.open(directory: "/store", fileSystem: fs)
                try log.write { transaction in
                    let page = try transaction.allocatePageID()
                    try transaction.write(page, bytes: bytes, compress: compress)
                    try RecordTreeTests.saveRoot(RecordTreeRoot(rootPageID: page, count: 3), in: transaction)
                }
                let snapshot = try log.snapshot()
                let reader = RecordTreeReader(snapshot: snapshot, root: RecordTreeTests.loadRoot(try snapshot.read(Self.rootPage)),
                                              cache: NodeCache())
                for attempt in 0..<3 {  // uncached, admitted, then again
                    for id: UInt64 in [4, 5, 6, 1, 100] {
                        #expect("\(name), compressed \(compress), attempt \(attempt), id \(id)", performing: { _ = try reader.get(id) },
                                throws: { error in
                                    if case RecordTreeError.corruptNode = error { return true }
                                    return false
                                })
                    }
                }
            }
        }
    }
}
