import Testing
#if canImport(Glibc)
import Glibc
#endif
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

@Suite struct PageLogTests {
    @Test func writesReadsAndReopens() throws {
        let fs = MemoryFileSystem()
        var pages: [UInt64: [UInt8]] = [:]
        var random = SeededRandom(seed: 1)
        do {
            let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
            #expect(log.recoveryReport.created)
            for _ in 0..<20 {
                try log.write { txn in
                    for _ in 0..<5 {
                        let id = try txn.allocatePageID()
                        let bytes = randomPage(&random)
                        try txn.write(id, entityID: 7, schemaVersion: 3, bytes: bytes)
                        pages[id] = bytes
                    }
                }
            }
            #expect(try contents(of: log) == pages)
            let page = try #require(try log.read(20))
            #expect(page.entityID == 7 && page.schemaVersion == 3)
            try log.close()
        }
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(!reopened.recoveryReport.created)
        #expect(reopened.recoveryReport.replayedTransactions == 0)
        #expect(try contents(of: reopened) == pages)
        #expect(reopened.statistics.segmentCount > 1, "the workload should have rolled segments")
    }

    @Test func worksOnTheRealFileSystem() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        var options = PageLogOptions()
        options.segmentSize = 64 << 10
        var pages: [UInt64: [UInt8]] = [:]
        var random = SeededRandom(seed: 2)
        do {
            let log = try PageLog.open(directory: directory, options: options)
            for round in 0..<30 {
                try log.write(durability: round % 2 == 0 ? .durable : .relaxed) { txn in
                    let id = try txn.allocatePageID()
                    let bytes = randomPage(&random, maximum: 8000)
                    try txn.write(id, bytes: bytes)
                    pages[id] = bytes
                }
            }
            // A second instance on the same folder is refused while this one is open.
            #expect(throws: PageLogError.locked(path: directory)) { try PageLog.open(directory: directory) }
            try log.close()
        }
        let reopened = try PageLog.open(directory: directory, options: options)
        #expect(try contents(of: reopened) == pages)
        try reopened.close()
    }

    @Test func snapshotsDoNotSeeLaterCommits() throws {
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: smallOptions())
        try log.write { try $0.write(1, bytes: [1, 1, 1]) }
        let before = try log.snapshot()
        try log.write { txn in
            try txn.write(1, bytes: [2, 2])
            try txn.write(2, bytes: [3])
            // Inside the transaction, readers still see the committed state, the transaction its own.
            #expect(try log.read(1)?.bytes == [1, 1, 1])
            #expect(try txn.read(1)?.bytes == [2, 2])
        }
        #expect(try before.read(1)?.bytes == [1, 1, 1])
        #expect(try before.read(2) == nil)
        #expect(try log.read(1)?.bytes == [2, 2])
        #expect(try log.read(2)?.bytes == [3])
    }

    @Test func aThrowingBodyCommitsNothing() throws {
        struct Abort: Error {}
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        try log.write { try $0.write(1, bytes: [9]) }
        #expect(throws: Abort.self) {
            try log.write { txn in
                try txn.write(1, bytes: [8])
                let id = try txn.allocatePageID()
                for _ in 0..<40 { try txn.write(id, bytes: [UInt8](repeating: 7, count: 1000)) }  // spills to the log
                throw Abort()
            }
        }
        #expect(try contents(of: log) == [1: [9]])
        // The abandoned id is handed out again, and the spilled frames stay dead after recovery.
        let id = try log.write { try $0.allocatePageID() }
        #expect(id == PageLog.firstAllocatablePageID)
        try log.write { try $0.write(2, bytes: [5]) }
        fs.syncEverything()
        var random = SeededRandom(seed: 3)
        fs.simulateCrash(mode: .keepAll, using: &random)
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(try contents(of: reopened) == [1: [9], 2: [5]])
    }

    @Test func largeTransactionsSpillAndReadTheirOwnWrites() throws {
        var options = smallOptions()
        options.writeBufferSize = 1024
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: options)
        var random = SeededRandom(seed: 4)
        var expected: [UInt64: [UInt8]] = [:]
        try log.write { txn in
            for _ in 0..<200 {
                let id = try txn.allocatePageID()
                let bytes = random.bytes(900)
                try txn.write(id, bytes: bytes)
                expected[id] = bytes
            }
            for (id, bytes) in expected { #expect(try txn.read(id)?.bytes == bytes) }
        }
        #expect(try contents(of: log) == expected)
    }

    @Test func freedPagesDisappearAndTheirIDsAreReused() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        let ids = try log.write { txn in
            try (0..<3).map { index -> UInt64 in
                let id = try txn.allocatePageID()
                try txn.write(id, bytes: [UInt8(index)])
                return id
            }
        }
        try log.write { try $0.free(ids[1]) }
        #expect(try log.read(ids[1]) == nil)
        let reused = try log.write { try $0.allocatePageID() }
        #expect(reused == ids[1])
        try log.close()
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(try contents(of: reopened) == [ids[0]: [0], ids[2]: [2]])
    }

    @Test func rejectsBadRequests() throws {
        var options = smallOptions()
        options.maximumPageSize = 100
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: options)
        #expect(throws: PageLogError.invalidPageID(1000)) { try log.write { try $0.write(1000, bytes: [1]) } }
        #expect(throws: PageLogError.pageTooLarge(bytes: 101, maximum: 100)) {
            try log.write { try $0.write(1, bytes: [UInt8](repeating: 0, count: 101)) }
        }
        #expect(try contents(of: log).isEmpty)
        try log.close()
        #expect(throws: PageLogError.closed) { try log.write { try $0.write(1, bytes: [1]) } }
    }

    @Test func openingAfterACleanCloseReadsNoDataPages() throws {
        let fs = MemoryFileSystem()
        var random = SeededRandom(seed: 5)
        var options = smallOptions()
        options.segmentSize = 1 << 20
        options.checkpointInterval = 1 << 30
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        for _ in 0..<50 {
            try log.write(durability: .relaxed) { txn in
                for _ in 0..<20 { try txn.write(try txn.allocatePageID(), bytes: random.bytes(1000)) }
            }
        }
        try log.close()
        let before = fs.bytesRead
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        let read = fs.bytesRead - before
        #expect(reopened.recoveryReport.replayedBytes == 0)
        #expect(reopened.statistics.pageCount == 1000)
        // Superblock (8 KiB) + segment headers + checkpoint root + one table chunk; the store holds ~1 MB of pages.
        #expect(read < 48 << 10, "open read \(read) bytes")
    }

    @Test func recoveryReplaysTheTailAfterTheCheckpoint() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        try log.write { try $0.write(1, bytes: [1]) }
        try log.checkpoint()
        try log.write { try $0.write(2, bytes: [2]) }
        try log.write { try $0.write(1, bytes: [3]) }
        var random = SeededRandom(seed: 6)
        fs.simulateCrash(mode: .dropAll, using: &random)  // durable commits survive a power loss
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(reopened.recoveryReport.replayedTransactions == 2)
        #expect(try contents(of: reopened) == [1: [3], 2: [2]])
    }

    @Test func compactionReclaimsSpaceAndKeepsData() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var random = SeededRandom(seed: 7)
        let ids = try log.write { txn in try (0..<10).map { _ in try txn.allocatePageID() } }
        var expected: [UInt64: [UInt8]] = [:]
        func overwrite(_ count: Int) throws {
            for _ in 0..<count {
                try log.write(durability: .relaxed) { txn in
                    let id = ids.randomElement(using: &random)!
                    let bytes = random.bytes(Int.random(in: 100...900, using: &random))
                    try txn.write(id, bytes: bytes)
                    expected[id] = bytes
                }
            }
        }
        try overwrite(200)
        let held = try log.snapshot()  // an old snapshot delays the deletion of what it reads
        let heldContents = try contents(of: log)
        let heldSegments = Set(try held.pageIDs().map { UInt64(try held.location(of: $0).segment) })
        try overwrite(100)
        let before = log.statistics
        #expect(Double(before.logBytes) > 3 * Double(before.liveBytes))
        let report = try log.compact()
        #expect(!report.retiredSegments.isEmpty)
        #expect(heldSegments.isDisjoint(with: report.deletedSegments))
        for (id, bytes) in heldContents { #expect(try held.read(id)?.bytes == bytes) }
        _ = consume held
        try log.checkpoint()
        let after = log.statistics
        #expect(Double(after.logBytes) <= 2 * Double(after.liveBytes) + Double(smallOptions().segmentSize),
                "log \(after.logBytes) live \(after.liveBytes)")
        #expect(after.segmentCount < before.segmentCount)
        #expect(try contents(of: log) == expected)
        let segmentFiles = try fs.contentsOfDirectory(storePath).filter { $0.hasSuffix(".seg") }
        #expect(segmentFiles.count == after.segmentCount)
        try log.close()
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(try contents(of: reopened) == expected)
    }

    /// Dead space in the active segment is reclaimed too: a compaction that finds most of it
    /// dead seals it first, then moves its live pages out like any sealed segment's.
    @Test func compactionSealsAMostlyDeadActiveSegment() throws {
        let fs = MemoryFileSystem()
        var options = smallOptions()
        options.segmentSize = 8 << 20  // everything below stays in the first segment
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        var random = SeededRandom(seed: 9)
        let ids = try log.write { txn in try (0..<10).map { _ in try txn.allocatePageID() } }
        var expected: [UInt64: [UInt8]] = [:]
        for _ in 0..<400 {
            try log.write(durability: .relaxed) { txn in
                let id = ids.randomElement(using: &random)!
                let bytes = random.bytes(1_000)
                try txn.write(id, bytes: bytes)
                expected[id] = bytes
            }
        }
        let before = log.statistics
        #expect(before.segmentCount == 1)
        #expect(Double(before.logBytes) > 10 * Double(before.liveBytes))
        let report = try log.compact()
        #expect(report.retiredSegments == [1])
        #expect(report.deletedSegments == [1])
        let after = log.statistics
        #expect(after.logBytes < before.logBytes / 10, "log \(after.logBytes), \(before.logBytes) before")
        #expect(try contents(of: log) == expected)
        try log.close()
        #expect(try contents(of: PageLog.open(directory: storePath, fileSystem: fs, options: options)) == expected)

        // Mostly live: left alone.
        let live = try PageLog.open(directory: "/live", fileSystem: fs, options: options)
        try live.write { txn in for _ in 0..<40 { try txn.write(try txn.allocatePageID(), bytes: random.bytes(1_000)) } }
        let untouched = try live.compact()
        #expect(untouched.retiredSegments.isEmpty && untouched.relocatedPages == 0)
        try live.close()
    }

    /// `compact(relocating: false)` retires only sealed segments without a live page and
    /// moves nothing; an explicit compaction then moves the live pages left.
    @Test func compactionWithoutRelocationRetiresOnlyEmptySegments() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var random = SeededRandom(seed: 12)
        let ids = try log.write { txn in try (0..<40).map { _ in try txn.allocatePageID() } }
        var expected: [UInt64: [UInt8]] = [:]
        func write(_ ids: some Sequence<UInt64>) throws {
            for id in ids {
                try log.write(durability: .relaxed) { txn in
                    expected[id] = random.bytes(1_000)
                    try txn.write(id, bytes: expected[id] ?? [])
                }
            }
        }
        try write(ids)
        try write(ids.prefix(20))  // the first segments emptied
        try write(ids.dropFirst(20).enumerated().filter { $0.offset % 2 == 0 }.map(\.element))  // the next ones half
        try log.checkpoint()
        func liveSegments() throws -> Set<UInt64> {
            let snapshot = try log.snapshot()
            return Set(try snapshot.pageIDs().map { UInt64(try snapshot.location(of: $0).segment) })
        }
        let before = try liveSegments()
        let report = try log.compact(targetAmplification: 1.0, relocating: false)
        #expect(report.relocatedPages == 0 && report.relocatedBytes == 0)
        #expect(!report.retiredSegments.isEmpty)
        #expect(before.isDisjoint(with: report.retiredSegments), "retired \(report.retiredSegments), live pages in \(before)")
        #expect(try liveSegments() == before)
        #expect(try contents(of: log) == expected)

        let moved = try log.compact(targetAmplification: 1.0)
        #expect(moved.relocatedPages > 0 && !before.isDisjoint(with: moved.retiredSegments))
        #expect(try contents(of: log) == expected)
        try log.close()
        #expect(try contents(of: PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())) == expected)
    }

    /// Compaction stops once the log is under its target: a retired segment's bytes count as
    /// gone (the checkpoints at the end delete it), so emptying one segment that brings the
    /// log under the target moves no other.
    @Test func compactionStopsOnceTheLogIsUnderItsTarget() throws {
        let options = smallOptions()
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: options)
        var random = SeededRandom(seed: 14)
        let ids = try log.write { txn in try (0..<60).map { _ in try txn.allocatePageID() } }
        func write(_ ids: some Sequence<UInt64>) throws {
            for id in ids { try log.write(durability: .relaxed) { try $0.write(id, bytes: random.bytes(1_000)) } }
        }
        try write(ids)
        let snapshot = try log.snapshot()
        var segments: [UInt64: [UInt64]] = [:]  // pages by segment
        for id in ids { segments[UInt64(try snapshot.location(of: id).segment), default: []].append(id) }
        _ = consume snapshot
        let sealed = segments.keys.sorted().dropLast()  // the last one is still active
        try #require(sealed.count >= 3)
        try write(segments[sealed[0]] ?? [])  // the first segment emptied
        try write(sealed.dropFirst().compactMap { segments[$0]?.first })  // one page less in each other
        let before = log.statistics
        // The target: the log without one segment's worth, so emptying the first one is enough.
        let target = (Double(before.logBytes) - Double(options.segmentSize) / 2) / Double(before.liveBytes)
        let report = try log.compact(targetAmplification: target)
        #expect(report.retiredSegments == [sealed[0]], "retired \(report.retiredSegments) for a target of \(target)")
        #expect(report.relocatedPages == 0)
        let after = log.statistics
        #expect(Double(after.logBytes) <= target * Double(after.liveBytes))
    }

    /// While relocations are held, automatic compaction moves no page (each page stays where
    /// its last write put it); once released, it brings the log back under its bound.
    @Test func heldRelocationsMoveNoPageUntilReleased() throws {
        let options = automaticCompactionOptions()
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: options)
        var random = SeededRandom(seed: 13)
        let ids = try log.write { txn in try (0..<20).map { _ in try txn.allocatePageID() } }
        var expected: [UInt64: [UInt8]] = [:]
        try log.holdingAutomaticRelocations {
            var written: [UInt64: PageLocation] = [:]
            for step in 0..<1_000 {
                // Every fifth page is written once only, so most segments keep a live page.
                let id = step < ids.count ? ids[step] : ids[Int.random(in: 0..<ids.count, using: &random) / 5 * 5 + 1 + step % 4]
                try log.write(durability: .relaxed) { txn in
                    expected[id] = random.bytes(500)
                    try txn.write(id, bytes: expected[id] ?? [])
                }
                written[id] = try log.snapshot().location(of: id)
            }
            waitForBackgroundCompaction(log)
            let snapshot = try log.snapshot()
            for (id, location) in written {
                #expect(try snapshot.location(of: id) == location, "page \(id) moved while relocations were held")
            }
            #expect(Double(log.statistics.logBytes) > 2 * Double(log.statistics.liveBytes))
        }
        waitForBackgroundCompaction(log)
        let statistics = log.statistics
        #expect(log.backgroundError.withLock { $0 } == nil)
        #expect(Double(statistics.logBytes) <= 2 * Double(statistics.liveBytes) + Double(4 * options.segmentSize),
                "log \(statistics.logBytes) live \(statistics.liveBytes)")
        #expect(try contents(of: log) == expected)
    }

    /// `smallOptions` with automatic compaction on, from 64 KiB of log.
    private func automaticCompactionOptions() -> PageLogOptions {
        var options = smallOptions()
        options.automaticCompaction = true
        options.compactionMinimumBytes = 64 << 10
        return options
    }

    @Test func automaticCompactionBoundsSpaceAmplification() throws {
        let options = automaticCompactionOptions()
        let log = try PageLog.open(directory: storePath, fileSystem: MemoryFileSystem(), options: options)
        var random = SeededRandom(seed: 8)
        let ids = try log.write { txn in try (0..<20).map { _ in try txn.allocatePageID() } }
        for _ in 0..<2000 {
            try log.write(durability: .relaxed) { txn in
                try txn.write(ids.randomElement(using: &random)!, bytes: random.bytes(500))
            }
        }
        waitForBackgroundCompaction(log)
        let statistics = log.statistics
        #expect(log.backgroundError.withLock { $0 } == nil)
        #expect(statistics.segmentCount < 30, "compaction deleted segments: \(statistics.segmentCount) left")
        // 2x, plus the slack of the active segment and of a compaction's own output.
        #expect(Double(statistics.logBytes) <= 2 * Double(statistics.liveBytes) + Double(4 * options.segmentSize),
                "log \(statistics.logBytes) live \(statistics.liveBytes)")
    }
}

@Suite struct TornTailTests {
    /// A torn write in the middle of the unsynced tail: later frames that did reach the disk
    /// must never be replayed, even after new commits fill the torn gap exactly.
    @Test func aCutTailIsNeverAppendedTo() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        let pageA = [UInt8](repeating: 0x41, count: 300)
        try log.write(durability: .relaxed) { try $0.write(1, bytes: pageA) }
        try log.write(durability: .relaxed) { try $0.write(2, bytes: [UInt8](repeating: 0x42, count: 300)) }
        let snapshot = try log.snapshot()
        let a = try snapshot.location(of: 1), b = try snapshot.location(of: 2)
        #expect(a.segment == b.segment && a.offset < b.offset)
        // Power loss: transaction A's frames never reached the disk, B's did.
        let name = storePath + "/" + String(repeating: "0", count: 15) + "\(a.segment).seg"
        var bytes = try #require(fs.contents(of: name))
        for index in Int(a.offset)..<Int(b.offset) { bytes[index] = 0 }
        fs.setContents(of: name, to: bytes)
        var random = SeededRandom(seed: 9)
        fs.simulateCrash(mode: .keepAll, using: &random)

        let recovered = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(recovered.recoveryReport.tailWasTorn)
        #expect(try contents(of: recovered).isEmpty)
        // The same transaction again fills the gap byte for byte if written in place.
        try recovered.write { try $0.write(1, bytes: pageA) }
        fs.simulateCrash(mode: .dropAll, using: &random)
        let again = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        #expect(try contents(of: again) == [1: pageA])
    }

    /// Damage to bytes a later commit proves were synced is corruption, not a torn tail.
    @Test func damageBeforeASyncedCommitIsCorruption() throws {
        let fs = MemoryFileSystem()
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var random = SeededRandom(seed: 10)
        try log.write { try $0.write(1, bytes: random.bytes(200)) }
        try log.write { try $0.write(2, bytes: random.bytes(200)) }
        let location = try log.snapshot().location(of: 1)
        let name = storePath + "/" + String(repeating: "0", count: 15) + "\(location.segment).seg"
        var bytes = try #require(fs.contents(of: name))
        bytes[Int(location.offset) + 60] ^= 0x10  // inside the payload
        fs.setContents(of: name, to: bytes)
        fs.simulateCrash(mode: .keepAll, using: &random)
        do {
            let opened = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
            Issue.record("opening a store with a damaged synced frame succeeded: \(opened.recoveryReport) \(try contents(of: opened).keys) \(location)")
        } catch let error as PageLogError {
            #expect(error.isCorruption, "\(error)")
            #expect("\(error)".contains(name))
        }
    }
}

@Suite struct RelaxedDurabilityTests {
    /// A stream of relaxed commits is synced every `relaxedSyncBytes`, so a power loss takes
    /// at most about that much of it.
    @Test func relaxedCommitsAreSyncedEveryFewBytes() throws {
        let fs = MemoryFileSystem()
        var options = smallOptions()
        options.segmentSize = 1 << 20
        options.checkpointInterval = 1 << 30
        options.relaxedSyncBytes = 8 << 10
        let log = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        var random = SeededRandom(seed: 54)
        var written: [UInt64: [UInt8]] = [:]
        for _ in 0..<100 {
            try log.write(durability: .relaxed) { txn in
                let id = try txn.allocatePageID()
                let bytes = random.bytes(1000)
                try txn.write(id, bytes: bytes)
                written[id] = bytes
            }
        }
        #expect(log.statistics.segmentSyncs >= 10, "\(log.statistics.segmentSyncs) syncs for ~100 KB of relaxed commits")
        fs.simulateCrash(mode: .dropAll, using: &random)
        let reopened = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        let survived = try contents(of: reopened)
        // Every page that survived is intact, and at most ~8 KiB (a few 1 KB commits) was lost.
        for (id, bytes) in survived { #expect(written[id] == bytes) }
        #expect(survived.count >= written.count - 9, "\(survived.count) of \(written.count) relaxed commits survived")
    }
}
