import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// A full device (Architecture.md, invariant 33, "Space reserve"): a write that finds it full
/// gives the reserve back; the store then opens without needing new space (a cut tail is
/// truncated in place, invariant 6), takes small writes in the room the reserve left, and
/// compaction frees one segment at a time, refilling the reserve from what it frees.
@Suite struct SpaceReserveTests {
    static let reservePath = storePath + "/reserve"

    static func options() -> PageLogOptions {
        var options = smallOptions()
        options.spaceReserve = 24 << 10
        return options
    }

    static func segmentCount(_ fs: MemoryFileSystem) -> Int {
        fs.allFiles().keys.filter { $0.hasSuffix(".seg") }.count
    }

    /// Fills a store with 1 KiB pages, then makes the device full; returns the committed pages.
    static func fillThenRunOutOfSpace(_ fs: MemoryFileSystem, random: inout SeededRandom) throws -> [UInt64: [UInt8]] {
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options())
        #expect(fs.contents(of: reservePath)?.count == 24 << 10, "a writable open creates the reserve")
        #expect(!log.isLowOnSpace)
        var pages: [UInt64: [UInt8]] = [:]
        for _ in 0..<12 {
            try log.write { txn in
                for _ in 0..<10 {
                    let id = try txn.allocatePageID()
                    let bytes = random.bytes(1000)
                    try txn.write(id, bytes: bytes)
                    pages[id] = bytes
                }
            }
        }
        #expect(segmentCount(fs) >= 5)
        // Free four pages of every five: the old segments become mostly dead.
        try log.write { txn in
            for id in pages.keys.sorted() where id % 5 != 0 {
                try txn.free(id)
                pages[id] = nil
            }
        }
        // The device fills: a large write gets a short write and ENOSPC; the reserve is given back.
        fs.setCapacity(fs.usedBytes + 3000)
        do {
            try log.write { txn in
                for _ in 0..<20 { try txn.write(try txn.allocatePageID(), bytes: random.bytes(1000)) }
            }
            Issue.record("a write past the device's capacity succeeded")
        } catch let error as PageLogError {
            guard case .io(let io) = error else { Issue.record("\(error)"); return pages }
            #expect(io.kind == .noSpace, "\(io)")
        }
        #expect(fs.contents(of: reservePath)?.count == 0, "the reserve was given back")
        #expect(log.isLowOnSpace)
        #expect(throws: PageLogError.self) { try log.write { try $0.write(1, bytes: [1]) } }  // poisoned
        try log.close()
        return pages
    }

    /// The regression: after ENOSPC every writable open started a new segment after the cut
    /// tail — a new file, on a full device — and failed, so the app could not open its store
    /// to delete anything. Now the open truncates the tail in place and succeeds, frees and
    /// small writes fit in the room the reserve left, and compaction gives space back.
    @Test func aFullDeviceStillOpensTakesDeletesAndCompacts() throws {
        let seed = SeededRandom.seed(default: 0x0F_0175)
        print("aFullDeviceStillOpensTakesDeletesAndCompacts seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        var pages = try Self.fillThenRunOutOfSpace(fs, random: &random)
        let segments = Self.segmentCount(fs)
        let used = fs.usedBytes

        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        #expect(log.recoveryReport.tailWasTorn, "the short write left a torn frame")
        #expect(Self.segmentCount(fs) == segments, "no new segment after the cut")
        #expect(fs.usedBytes < used, "the cut bytes were given back")
        #expect(log.isLowOnSpace)
        #expect(try contents(of: log) == pages)
        // Deletes (frees) and a small write fit in the room.
        try log.write { txn in
            for id in pages.keys.sorted().prefix(3) {
                try txn.free(id)
                pages[id] = nil
            }
            let id = try txn.allocatePageID()
            pages[id] = [7, 7, 7]
            try txn.write(id, bytes: [7, 7, 7])
        }
        // Compaction frees segments and refills the reserve from what they held.
        let report = try log.compact(targetAmplification: 1.0)
        #expect(!report.deletedSegments.isEmpty, "\(report)")
        #expect(fs.usedBytes < used - 8192, "compaction freed space: \(fs.usedBytes) of \(used)")
        #expect(log.spaceReserveBytes > 0, "space the store freed refilled the reserve")
        #expect(try contents(of: log) == pages)
        #expect(log.checkInvariants().isEmpty, "\(log.checkInvariants())")
        try log.close()
        // Once the reserve is full again, the store writes as before, and everything survives a reopen.
        fs.setCapacity(nil)
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        #expect(!reopened.isLowOnSpace && fs.contents(of: Self.reservePath)?.count == 24 << 10)
        #expect(try contents(of: reopened) == pages)
        try reopened.close()
    }

    /// Opening after a torn tail needs no new space, reserve or not (here none, and no room at
    /// all): the tail is truncated at the cut, in place. A new segment after the cut — a new
    /// file — failed with ENOSPC on a full device.
    @Test func openingAfterACutTailNeedsNoNewSpace() throws {
        var random = SeededRandom(seed: 34)
        var options = Self.options()
        options.spaceReserve = 0
        options.preallocation = 0  // the file ends where the log does: its last 1,000 bytes are cut by hand
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        try log.write { try $0.write(1, bytes: random.bytes(3000)) }
        try log.write(durability: .relaxed) { try $0.write(2, bytes: random.bytes(3000)) }
        // The process dies; the last commit's end is lost (as a torn write would lose it); the
        // device is full to the last byte.
        fs.simulateCrash(mode: .keepAll, using: &random)
        let segment = storePath + "/0000000000000001.seg"
        var bytes = try #require(fs.contents(of: segment))
        bytes.removeLast(1000)
        fs.setContents(of: segment, to: bytes)
        fs.setCapacity(fs.usedBytes)
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        #expect(reopened.recoveryReport.tailWasTorn)
        #expect(Self.segmentCount(fs) == 1)
        #expect(try #require(fs.contents(of: segment)).count < bytes.count, "cut at the last valid frame")
        #expect(try contents(of: reopened).keys.sorted() == [1])
        // The room the cut gave back takes a small commit, which survives a power loss.
        try reopened.write { try $0.write(3, bytes: [3]) }
        fs.simulateCrash(mode: .dropAll, using: &random)
        #expect(try contents(of: PageLog.open(directory: storePath, fileSystem: fs, options: options)).keys.sorted() == [1, 3])
    }

    /// Low on space, compaction moves the segment with the fewest live bytes and deletes it
    /// before the next, so it needs room for one segment's live pages, not for all of them.
    @Test func lowOnSpaceCompactionDeletesEachSegmentBeforeTheNext() throws {
        let seed = SeededRandom.seed(default: 0x0F_0176)
        print("lowOnSpaceCompactionDeletesEachSegmentBeforeTheNext seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let pages = try Self.fillThenRunOutOfSpace(fs, random: &random)
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        let live = log.statistics.liveBytes
        // Room for about two segments' live pages (each holds about 3 KiB of them), not all of them.
        fs.setCapacity(fs.usedBytes + 6 << 10)
        #expect(live > 10 << 10)
        let report = try log.compact(targetAmplification: 1.0)
        #expect(report.retiredSegments.count >= 3, "\(report)")
        #expect(Set(report.deletedSegments).isSuperset(of: report.retiredSegments), "\(report)")
        #expect(try contents(of: log) == pages)
        try log.close()
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        #expect(try contents(of: reopened) == pages)
        try reopened.close()
    }

    /// A reserve is created whole or not at all (a crash while creating it leaves only a
    /// `.tmp`, deleted at the next open), and a device without room for it opens the store low
    /// on space; a store with the reserve turned off has none (and drops an earlier one).
    @Test func theReserveIsCreatedWholeOrNotAtAll() throws {
        var random = SeededRandom(seed: 33)
        let fs = MemoryFileSystem()
        fs.setFaultInjector { $0.kind == .rename && $0.path.hasSuffix("reserve.tmp") ? .crash : nil }
        _ = try? PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        fs.setFaultInjector(nil)
        fs.simulateCrash(mode: .keepAll, using: &random)
        #expect(fs.contents(of: Self.reservePath) == nil && fs.contents(of: Self.reservePath + ".tmp")?.count == 24 << 10)
        // No room for it (once the leftover is deleted): the store opens, low on space, and the
        // next open with room makes it.
        fs.setCapacity(fs.usedBytes - (24 << 10) + 1000)
        let full = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        #expect(full.isLowOnSpace && fs.contents(of: Self.reservePath) == nil)
        #expect(!fs.allFiles().keys.contains { $0.hasSuffix(".tmp") })
        try full.close()
        fs.setCapacity(nil)
        let roomy = try PageLog.open(directory: storePath, fileSystem: fs, options: Self.options())
        #expect(!roomy.isLowOnSpace && fs.contents(of: Self.reservePath) == [UInt8](repeating: 0, count: 24 << 10))
        try roomy.close()
        var none = Self.options()
        none.spaceReserve = 0
        let without = try PageLog.open(directory: storePath, fileSystem: fs, options: none)
        #expect(!without.isLowOnSpace && fs.contents(of: Self.reservePath) == nil)
        try without.close()
    }
}
