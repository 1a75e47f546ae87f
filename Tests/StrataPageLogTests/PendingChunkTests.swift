import Dispatch
import Synchronization
import Testing
import StrataFormat
import StrataIO
@testable import StrataPageLog
import StrataTestSupport

/// Invariant 16: a writer's open leaves the page table chunks pending, loads each at its
/// first lookup, materializes it before changing it, and lists its free ids only then.
@Suite struct PendingChunkTests {
    /// A store of pages 16..<`count + 16` (page `id` holds `payload(id, 0)`), checkpointed
    /// and closed, on an in-memory file system.
    static func makeStore(count: Int, freeing freed: Range<UInt64>? = nil) throws -> MemoryFileSystem {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        try log.write { transaction in
            for _ in 0..<count {
                let id = try transaction.allocatePageID()
                try transaction.write(id, bytes: payload(id, 0))
            }
        }
        if let freed { try log.write { transaction in for id in freed { try transaction.free(id) } } }
        try log.checkpoint()
        try log.close()
        return fs
    }

    /// The page table's chunk size, written out for its lookups, is the format's default.
    @Test func chunkSizeIsTheFormatDefault() {
        #expect(PageTable.chunkEntries == CheckpointRoot.defaultChunkEntries)
    }

    static func payload(_ id: UInt64, _ version: Int) -> [UInt8] {
        Array("page \(id) version \(version)".utf8)
    }

    static func open(_ fs: MemoryFileSystem) throws -> PageLog {
        try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
    }

    /// Where chunk `index` is stored: the writer's chunk table.
    static func chunkLocation(_ log: PageLog, _ index: Int) -> PageLocation {
        log.writerLock.withLock { _ in log.writer.chunkLocations[index] }
    }

    @Test func aDamagedChunkFailsOnlyTheLookupsThatNeedIt() throws {
        let fs = try Self.makeStore(count: 3_000)  // chunks 0, 1 and 2
        let location = try {
            let log = try Self.open(fs)
            defer { try? log.close() }
            return Self.chunkLocation(log, 1)
        }()
        #expect(!location.isNone)
        let segment = storePath + "/" + StoreFileNames.segment(UInt64(location.segment))
        var bytes = try #require(fs.contents(of: segment))
        bytes[Int(location.offset) + FrameHeader.size + 3] ^= 0x40  // inside the chunk's payload: its checksum fails
        fs.setContents(of: segment, to: bytes)

        // Opening reads no chunk, so it succeeds (an eager load would throw here).
        let log = try Self.open(fs)
        let snapshot = try log.snapshot()
        #expect(try snapshot.read(100)?.bytes == Self.payload(100, 0))    // chunk 0
        #expect(try snapshot.read(2_500)?.bytes == Self.payload(2_500, 0))  // chunk 2
        for _ in 0..<2 {  // every lookup needing chunk 1 fails, not only the first
            #expect { _ = try snapshot.read(1_500) } throws: { ($0 as? PageLogError)?.isCorruption == true }
        }
        #expect { _ = try snapshot.pageIDs() } throws: { ($0 as? PageLogError)?.isCorruption == true }

        // verify names the chunk and still reads every other page.
        let (pages, problems) = log.verifyPages(in: snapshot)
        #expect(pages == 3_000 - 1_024)
        #expect(problems.contains { $0.what.hasPrefix("page table chunk 1:") })

        // A commit changing a page of chunk 1 fails before its commit frame; others go on.
        #expect {
            try log.write { try $0.write(1_500, bytes: Self.payload(1_500, 1)) }
        } throws: { ($0 as? PageLogError)?.isCorruption == true }
        try log.write { try $0.write(100, bytes: Self.payload(100, 1)) }
        try log.close()

        let reopened = try Self.open(fs)
        defer { try? reopened.close() }
        #expect(try reopened.read(100)?.bytes == Self.payload(100, 1))
        #expect(try reopened.read(2_999)?.bytes == Self.payload(2_999, 0))
        #expect { _ = try reopened.read(1_500) } throws: { ($0 as? PageLogError)?.isCorruption == true }
    }

    @Test func freeIdsOfAPendingChunkAreReusedOnceItIsMaterialized() throws {
        let fs = try Self.makeStore(count: 3_000, freeing: 200..<300)
        let log = try Self.open(fs)
        defer { try? log.close() }
        #expect(log.checkInvariants() == [])
        // Chunk 0 is pending: its free ids are not known yet, so a new page takes the next id.
        let first = try log.write { transaction -> UInt64 in
            let id = try transaction.allocatePageID()
            try transaction.write(id, bytes: Self.payload(id, 0))
            return id
        }
        #expect(first == 3_016)
        #expect(log.checkInvariants() == [])
        // Changing a page of chunk 0 materializes it and lists its free ids, lowest first.
        try log.write { try $0.write(17, bytes: Self.payload(17, 1)) }
        var reused: [UInt64] = []
        try log.write { transaction in
            for _ in 0..<150 {
                let id = try transaction.allocatePageID()
                try transaction.write(id, bytes: Self.payload(id, 0))
                reused.append(id)
            }
        }
        #expect(Array(reused.prefix(100)) == Array(200..<300))
        #expect(Set(reused).count == reused.count && reused.allSatisfy { $0 < 200 || $0 >= 300 ? $0 > 3_016 : true })
        #expect(log.checkInvariants() == [])
        var expected: [UInt64: [UInt8]] = [:]
        for id in UInt64(16)..<3_016 where !(200..<300).contains(id) { expected[id] = Self.payload(id, id == 17 ? 1 : 0) }
        for id in reused + [first] { expected[id] = Self.payload(id, 0) }
        #expect(try contents(of: log) == expected)
    }

    @Test func compactionAndCheckpointsAfterALazyOpenKeepEveryPage() throws {
        let fs = try Self.makeStore(count: 2_500)
        var expected: [UInt64: [UInt8]] = [:]
        for id in UInt64(16)..<2_516 { expected[id] = Self.payload(id, 0) }
        // Rewrite most pages in a later segment so the first one is mostly dead.
        do {
            let log = try Self.open(fs)
            try log.write { transaction in
                for id in stride(from: UInt64(16), to: 2_516, by: 2) {
                    try transaction.write(id, bytes: Self.payload(id, 1))
                    expected[id] = Self.payload(id, 1)
                }
            }
            try log.checkpoint()
            try log.close()
        }
        let log = try Self.open(fs)
        let report = try log.compact(targetAmplification: 1.0)
        #expect(report.relocatedPages > 0)
        #expect(log.checkInvariants() == [])
        #expect(try contents(of: log) == expected)
        try log.checkpoint()
        try log.close()
        let reopened = try Self.open(fs)
        defer { try? reopened.close() }
        #expect(try contents(of: reopened) == expected)
        #expect(reopened.checkInvariants() == [])
    }

    /// Threads looking pages up at once in one snapshot of a fresh open: every chunk's first
    /// lookups race to load it (once, under its lock), later ones read it without a lock.
    @Test func concurrentFirstLookupsSeeEveryPage() throws {
        let fs = try Self.makeStore(count: 5_000)
        let log = try Self.open(fs)
        defer { try? log.close() }
        let snapshot = try log.snapshot()
        let wrong = Lock(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            var mismatches = 0
            // Each thread walks the ids in its own order, so first lookups of a chunk collide.
            for step in 0..<5_000 {
                let id = UInt64(16 + (step * (thread * 2 + 1) + thread * 977) % 5_000)
                if (try? snapshot.read(id))??.bytes != Self.payload(id, 0) { mismatches += 1 }
            }
            wrong.withLock { $0 += mismatches }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect(try snapshot.pageIDs().count == 5_000)
    }
}
