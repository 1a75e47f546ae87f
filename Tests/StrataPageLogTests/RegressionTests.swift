import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// Regressions, each named after the problem it pins down.
@Suite struct RegressionTests {
    static func superblockPath() -> String { storePath + "/superblock" }

    /// Rewrites the superblock slot at `slot` with a modified copy, re-checksummed.
    static func rewriteSlot(_ fs: MemoryFileSystem, slot: Int, _ change: (inout [UInt8]) -> Void) {
        var bytes = fs.contents(of: superblockPath())!
        let base = slot * Superblock.slotStride
        var slice = Array(bytes[base..<(base + Superblock.encodedSize)])
        change(&slice)
        let crc = CRC32C.checksum(Array(slice[0..<(Superblock.encodedSize - 4)]))
        withUnsafeBytes(of: crc.littleEndian) { raw in for (index, byte) in raw.enumerated() { slice[Superblock.encodedSize - 4 + index] = byte } }
        bytes.replaceSubrange(base..<(base + Superblock.encodedSize), with: slice)
        fs.setContents(of: superblockPath(), to: bytes)
    }

    /// An LSN abandoned before a checkpoint is reused after a reopen; recovering from the
    /// older superblock slot replays both and must not merge them into one transaction.
    @Test func abandonedLSNReusedAfterCheckpointDoesNotBreakOlderSlotRecovery() throws {
        struct Abort: Error {}
        let fs = MemoryFileSystem()
        do {
            let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
            try log.write { try $0.write(1, bytes: [1]) }
            try? log.write { txn in
                try txn.write(2, bytes: [2])
                throw Abort()
            }
            try log.checkpoint()
            try log.close()
        }
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        try log.write { try $0.write(3, bytes: [3]) }  // reuses the abandoned LSN
        var random = SeededRandom(seed: 52)
        fs.simulateCrash(mode: .dropAll, using: &random)
        // Damage the newest slot (epoch 2): recovery falls back to the creation checkpoint and
        // replays the first commit, the abandoned frames, the checkpoint's frames and the new commit.
        let newest = try #require(fs.contents(of: Self.superblockPath()).map { bytes in
            (0..<2).max { a, b in
                let epoch = { (slot: Int) in (try? Superblock.decode(Array(bytes[(slot * 4096)..<(slot * 4096 + 128)])).epoch) ?? 0 }
                return epoch(a) < epoch(b)
            }!
        })
        var bytes = fs.contents(of: Self.superblockPath())!
        bytes[newest * Superblock.slotStride + 40] ^= 0xFF
        fs.setContents(of: Self.superblockPath(), to: bytes)
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(reopened.recoveryReport.superblockEpoch == 1, "recovered from the older slot")
        #expect(try contents(of: reopened) == [1: [1], 3: [3]])
    }

    /// A superblock with a valid checksum but an absurd checkpoint offset is corruption, not
    /// an integer overflow.
    @Test func superblockWithHugeRootOffsetIsATypedError() throws {
        let fs = MemoryFileSystem()
        try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions()).close()
        for slot in 0..<2 {
            Self.rewriteSlot(fs, slot: slot) { slice in
                slice.replaceSubrange(56..<64, with: [0xF8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
            }
        }
        #expect(throws: PageLogError.self) { _ = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions()) }
        do {
            _ = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        } catch let error as PageLogError {
            #expect(error.isCorruption)
        }
    }

    /// A slot holding an epoch of the other slot's parity is not trusted.
    @Test func superblockSlotParityIsChecked() throws {
        let fs = MemoryFileSystem()
        try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions()).close()
        // Slot 1 holds epoch 1 after creation; give it an even epoch.
        Self.rewriteSlot(fs, slot: 1) { slice in slice[32] = 2 }
        do {
            _ = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
            Issue.record("a slot with the wrong parity was accepted")
        } catch let error as PageLogError {
            #expect(error.isCorruption, "\(error)")
        }
    }

    /// Frames of a newer format version in the tail are reported, never cut off as torn.
    @Test func newerFrameVersionInTheTailIsUnsupportedNotTorn() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        try log.write { try $0.write(1, bytes: [1, 2, 3]) }
        let location = try log.snapshot().location(of: 1)
        let name = storePath + "/" + String(repeating: "0", count: 15) + "\(location.segment).seg"
        var bytes = try #require(fs.contents(of: name))
        let newer = currentFormatVersion + 1
        bytes[Int(location.offset) + 4] = UInt8(newer)  // frame format version, newer than the library's
        fs.setContents(of: name, to: bytes)
        var random = SeededRandom(seed: 51)
        fs.simulateCrash(mode: .keepAll, using: &random)
        #expect(throws: PageLogError.unsupportedFormatVersion(file: name, found: newer, supported: currentFormatVersion)) {
            _ = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        }
    }

    /// Only 16 lowercase hex digits name a segment; other files are ignored.
    @Test func looselySpelledSegmentNamesAreNotSegments() throws {
        let fs = MemoryFileSystem()
        try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions()).close()
        for name in ["+000000000000009.seg", "000000000000000A.seg", "-000000000000000.seg"] {
            _ = try fs.openFile(storePath + "/" + name, create: true)
        }
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(log.statistics.segmentCount == 1)
    }
}

/// A checksummed commit claiming a next page id near the maximum (2^31) must not make
/// recovery allocate memory per unused id (the free list was an array of every free id).
@Suite struct HugeNextPageIDRegressionTests {
    @Test func recoveryKeepsUnusedIDSpansAsRanges() throws {
        let fs = MemoryFileSystem()
        var options = smallOptions()
        options.preallocation = 0  // the file ends where the log does: a transaction is appended by hand
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        try log.write { try $0.write(1, bytes: [1]) }
        let end = try log.snapshot().location(of: 1)
        let name = storePath + "/" + String(repeating: "0", count: 15) + "\(end.segment).seg"
        var bytes = try #require(fs.contents(of: name))
        // Append a valid transaction by hand: one page frame and a commit claiming 2^31 - 1.
        let lsn = end.lsn + 1
        let nextPageID = PageLog.maximumPageID - 1
        [UInt8]([7, 7, 7]).withUnsafeBytes {
            _ = FrameCodec.append(kind: .page, pageID: nextPageID - 1, lsn: lsn, payload: $0, compress: false, to: &bytes)
        }
        CommitRecord(frameCount: 1, durableSegment: 0, durableOffset: 0, nextPageID: nextPageID).encoded().withUnsafeBytes {
            _ = FrameCodec.append(kind: .commit, pageID: 0, lsn: lsn, payload: $0, compress: false, to: &bytes)
        }
        fs.setContents(of: name, to: bytes)
        var random = SeededRandom(seed: 53)
        fs.simulateCrash(mode: .keepAll, using: &random)

        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(try reopened.read(nextPageID - 1)?.bytes == [7, 7, 7])
        #expect(reopened.checkInvariants().isEmpty)
        // The lowest free id is handed out first.
        #expect(try reopened.write { try $0.allocatePageID() } == PageLog.firstAllocatablePageID)
    }
}
