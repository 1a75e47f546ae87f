import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// Zeros written ahead of the log for durable commits (Architecture.md, invariant 35): they
/// extend the active segment only, never hold data, are cut when the segment is sealed and
/// when the store closes, and a crash that leaves them (synced or not, torn or not) loses no
/// durable commit.
@Suite struct PreallocationTests {
    static let segment = storePath + "/0000000000000001.seg"

    static func options() -> PageLogOptions {
        var options = smallOptions()
        options.segmentSize = 256 << 10
        options.checkpointInterval = 1 << 30
        options.preallocation = 64 << 10
        return options
    }

    /// The log's end in the active segment: the end of the last frame, from the page table.
    static func endOfLastFrame(_ log: PageLog, pages: some Sequence<UInt64>) throws -> UInt64 {
        let snapshot = try log.snapshot()
        return try pages.map { try snapshot.location(of: $0) }.map { UInt64($0.offset) + UInt64($0.length) }.max() ?? 0
    }

    @Test func aDurableCommitLeavesZerosAheadAndARelaxedOneDoesNot() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        let created = try #require(fs.contents(of: Self.segment)).count
        try log.write(durability: .relaxed) { try $0.write(1, bytes: [UInt8](repeating: 1, count: 500)) }
        let afterRelaxed = try #require(fs.contents(of: Self.segment))
        #expect(afterRelaxed.count > created && afterRelaxed.count < created + 4096, "a relaxed commit writes its frames only")
        try log.write { try $0.write(2, bytes: [UInt8](repeating: 2, count: 500)) }
        let afterDurable = try #require(fs.contents(of: Self.segment))
        // The commit frame ends the log; the file goes on with zeros to 64 KiB past it.
        let pagesEnd = try Self.endOfLastFrame(log, pages: [1, 2])
        #expect(afterDurable.count >= Int(pagesEnd) + (64 << 10) - 4096, "\(afterDurable.count) bytes, pages end at \(pagesEnd)")
        let tail = afterDurable[(afterDurable.count - (32 << 10))...]
        #expect(tail.allSatisfy { $0 == 0 })
        // More durable commits overwrite the zeros rather than growing the file, until less
        // than a quarter of them is left.
        for id in UInt64(3)...8 { try log.write { try $0.write(id, bytes: [UInt8](repeating: UInt8(id), count: 500)) } }
        #expect(try #require(fs.contents(of: Self.segment)).count == afterDurable.count)
        #expect(log.checkInvariants().isEmpty)
        // What the writer reads and what a reopened store reads: every commit, nothing of the zeros.
        let expected = Dictionary(uniqueKeysWithValues: (UInt64(1)...8).map { ($0, [UInt8](repeating: UInt8($0), count: 500)) })
        #expect(try contents(of: log) == expected)
        try log.close()
        #expect(try contents(of: PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())) == expected)
    }

    @Test func sealedSegmentsAndAClosedStoreEndWithTheirLastFrame() throws {
        var random = SeededRandom(seed: SeededRandom.seed(default: 0x35_0001))
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        var pages: [UInt64: [UInt8]] = [:]
        // ~100 durable commits of ~3 KB: the log rolls over a few 256 KiB segments.
        for _ in 0..<100 {
            let bytes = random.bytes(3000)
            let id = try log.write { txn -> UInt64 in
                let id = try txn.allocatePageID()
                try txn.write(id, bytes: bytes, compress: false)
                return id
            }
            pages[id] = bytes
        }
        let segments = fs.allFiles().filter { $0.key.hasSuffix(".seg") }.sorted { $0.key < $1.key }
        #expect(segments.count >= 2)
        // A sealed segment ends where its successor says it does: its zeros were cut.
        for (index, (name, bytes)) in segments.dropLast().enumerated() {
            let next = try #require(fs.contents(of: segments[index + 1].key))
            let header = try SegmentHeader.decode(Array(next[0..<SegmentHeader.size]))
            #expect(UInt64(bytes.count) == header.previousSegmentEnd, "\(name)")
        }
        let active = try #require(segments.last?.value)
        let lastWritten = try #require(pages.keys.max())  // ids are allocated in order: the last commit's page
        #expect(active.count > Int(try Self.endOfLastFrame(log, pages: [lastWritten])) + 4096, "zeros ahead in the active segment")
        try log.close()
        let activeName = try #require(segments.last?.key)
        let closed = try #require(fs.contents(of: activeName))
        #expect(closed.count < active.count, "cut at close")
        #expect(closed.suffix(64).contains { $0 != 0 }, "the closed segment ends with a frame")
        #expect(try contents(of: PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())) == pages)
    }

    /// A power cut at every sync point of durable commits — zeros synced, kept, dropped or
    /// torn — reopens with every commit reported durable; writing then goes on where the
    /// log ends.
    @Test func powerCutsKeepEveryDurableCommit() throws {
        let seed = SeededRandom.seed(default: 0x35_0002)
        print("powerCutsKeepEveryDurableCommit seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var point = 0
        var tested = 0
        while true {
            var random = SeededRandom(seed: seed &+ UInt64(point))
            var durable: [UInt64: [UInt8]] = [:]
            var reachedTheEnd = false
            let (fs, _) = try MemoryFileSystem.runUntilPowerCut(atSync: point, mode: MemoryFileSystem.CrashMode.allCases[point % 3],
                                                                using: &random) { fs in
                var writes = SeededRandom(seed: seed)
                do {
                    let log = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
                    for _ in 0..<40 {
                        let bytes = writes.bytes(Int.random(in: 100...6000, using: &writes))
                        let id = try log.write { txn -> UInt64 in
                            let id = try txn.allocatePageID()
                            try txn.write(id, bytes: bytes)
                            return id
                        }
                        durable[id] = bytes
                    }
                    try log.close()
                    reachedTheEnd = true
                } catch {}
            }
            let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
            let found = try contents(of: reopened)
            for (id, bytes) in durable { #expect(found[id] == bytes, "page \(id) after a power cut at sync \(point)") }
            try reopened.write { try $0.write(15, bytes: [9]) }
            #expect(try reopened.read(15)?.bytes == [9])
            #expect(reopened.checkInvariants().isEmpty)
            tested += 1
            if reachedTheEnd { break }
            point += 1
        }
        #expect(tested > 40, "every sync point of 40 durable commits")
    }

    /// A preallocation the device refuses is skipped: the commit stands, the instance is not
    /// poisoned, and no more zeros are tried in that segment.
    @Test func aFullDeviceSkipsThePreallocation() throws {
        let fs = MemoryFileSystem()
        var options = Self.options()
        options.spaceReserve = 0
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        let before = try #require(fs.contents(of: Self.segment)).count
        fs.setCapacity(fs.usedBytes + 8192)  // room for the commit, not for 64 KiB of zeros
        try log.write { try $0.write(1, bytes: [UInt8](repeating: 1, count: 1000)) }
        let after = try #require(fs.contents(of: Self.segment)).count
        #expect(after > before && after < before + 8192, "the commit only")
        try log.write { try $0.write(2, bytes: [UInt8](repeating: 2, count: 1000)) }
        #expect(try log.read(2)?.bytes == [UInt8](repeating: 2, count: 1000))
        #expect(log.checkInvariants().isEmpty)
        try log.close()
        fs.setCapacity(nil)
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        #expect(try contents(of: reopened).keys.sorted() == [1, 2])
    }
}
