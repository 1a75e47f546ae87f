import Dispatch
import Synchronization
import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataTestSupport

/// Followers (Architecture.md invariant 32, "Reader processes"): a page log opened read-only
/// next to the instance writing the same folder — in one process here; the store-level tests
/// use a second process — sees exactly the committed state as of its last refresh.
@Suite struct FollowerTests {
    static func follow(_ fs: any FileSystem, _ directory: String = storePath, options: PageLogOptions = smallOptions()) throws -> PageLog {
        try PageLog.open(directory: directory, fileSystem: fs, options: options, readOnly: true)
    }

    /// One transaction of random changes to `pages` (a model of the log's content).
    static func change(_ log: PageLog, _ pages: inout [UInt64: [UInt8]], _ random: inout SeededRandom, size: Int = 3000,
                       durability: Durability? = nil) throws {
        var model = pages
        let durability = durability ?? (Bool.random(using: &random) ? .durable : .relaxed)
        try log.write(durability: durability) { txn in
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let existing = model.keys.sorted()
                let choice = existing.isEmpty ? 5 : Int.random(in: 0..<6, using: &random)
                switch choice {
                case 0:
                    let id = existing[Int.random(in: 0..<existing.count, using: &random)]
                    try txn.free(id)
                    model[id] = nil
                case 1, 2:
                    let id = existing[Int.random(in: 0..<existing.count, using: &random)]
                    let bytes = randomPage(&random, maximum: size)
                    try txn.write(id, bytes: bytes)
                    model[id] = bytes
                default:
                    let id = try txn.allocatePageID()
                    let bytes = randomPage(&random, maximum: size)
                    try txn.write(id, bytes: bytes)
                    model[id] = bytes
                }
            }
        }
        pages = model
    }

    @Test func seesNothingNewUntilRefreshThenExactlyTheCommittedPages() throws {
        let seed = SeededRandom.seed(default: 31)
        print("seesNothingNewUntilRefresh seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let writer = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var pages: [UInt64: [UInt8]] = [:]
        for _ in 0..<5 { try Self.change(writer, &pages, &random) }
        // Opens while the writer holds the store's lock.
        let follower = try Self.follow(fs)
        #expect(follower.isFollower)
        #expect(try contents(of: follower) == pages)
        #expect(try !follower.refresh())
        for round in 0..<40 {
            let seen = pages
            let held = try follower.snapshot()
            for _ in 0..<Int.random(in: 1...3, using: &random) { try Self.change(writer, &pages, &random) }
            #expect(try contents(of: follower) == seen, "round \(round): visible before refresh")
            #expect(try follower.refresh())
            #expect(try contents(of: follower) == pages, "round \(round)")
            #expect(try !follower.refresh())
            // A snapshot taken before the refresh keeps its table (invariant 11).
            for (id, bytes) in seen { #expect(try held.read(id)?.bytes == bytes) }
        }
        #expect(try #require(follower.followerPosition).segment > 1, "the workload should have rolled segments")
        #expect(follower.followerReloads == 0)
        try follower.close()
        #expect(throws: PageLogError.closed) { try follower.refresh() }
        try writer.close()
    }

    @Test func aFollowerNeverWrites() throws {
        var random = SeededRandom(seed: 32)
        let fs = MemoryFileSystem()
        let writer = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var pages: [UInt64: [UInt8]] = [:]
        for _ in 0..<20 { try Self.change(writer, &pages, &random) }
        let before = fs.counters.operations
        let follower = try Self.follow(fs)
        #expect(throws: PageLogError.readOnly(path: storePath)) { try follower.write { try $0.write(1, bytes: [1]) } }
        #expect(throws: PageLogError.readOnly(path: storePath)) { try follower.checkpoint() }
        #expect(throws: PageLogError.readOnly(path: storePath)) { try follower.compact() }
        _ = try follower.refresh()
        _ = try contents(of: follower)
        try follower.close()
        // No write, truncation, sync, creation, rename or removal: the counter of mutating operations did not move.
        #expect(fs.counters.operations == before)
        try writer.close()
    }

    @Test func aTransactionIsInvisibleUntilItsCommitFrame() throws {
        struct Abort: Error {}
        var options = smallOptions()
        options.writeBufferSize = 1024  // page frames reach the file long before the commit frame
        options.segmentSize = 64 << 10
        let fs = MemoryFileSystem()
        let writer = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        try writer.write { try $0.write(1, bytes: [1]) }
        let follower = try Self.follow(fs, options: options)
        let before = try contents(of: follower)
        var random = SeededRandom(seed: 33)
        var expected = before
        try writer.write { txn in
            let position = try #require(follower.followerPosition)
            for index in 0..<30 {
                let id = try txn.allocatePageID()
                let bytes = random.bytes(900)
                try txn.write(id, bytes: bytes)
                expected[id] = bytes
                if index % 7 == 6 {
                    // The follower reads the frames written so far, keeps them pending, applies nothing.
                    #expect(try !follower.refresh())
                    #expect(try contents(of: follower) == before)
                }
            }
            #expect(try #require(follower.followerPosition) > position, "the spilled frames were read")
        }
        #expect(try follower.refresh())
        #expect(try contents(of: follower) == expected)
        // An abandoned transaction's frames are dead: never applied, also after later commits.
        #expect(throws: Abort.self) {
            try writer.write { txn in
                for _ in 0..<20 { try txn.write(1, bytes: random.bytes(900)) }
                #expect(try !follower.refresh())
                throw Abort()
            }
        }
        #expect(try !follower.refresh())
        #expect(try contents(of: follower) == expected)
        try writer.write { try $0.write(2, bytes: [2]) }
        expected[2] = [2]
        #expect(try follower.refresh())
        #expect(try contents(of: follower) == expected)
        try follower.close()
        try writer.close()
    }

    /// Every prefix of a log's tail — the writer may be anywhere in an append — shows exactly
    /// the transactions whose commit frames are wholly in it: opened at that prefix, and
    /// refreshed while the file grows to its end in random steps.
    @Test func everyPrefixOfTheTailShowsTheCommitsWhollyInIt() throws {
        let seed = SeededRandom.seed(default: 34)
        print("everyPrefixOfTheTail seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        var options = smallOptions()
        options.segmentSize = 1 << 20  // one segment
        options.checkpointInterval = 1 << 30
        options.preallocation = 0  // the file ends where the log does: the states' ends are its sizes
        let fs = MemoryFileSystem()
        let writer = try PageLog.open(directory: storePath, fileSystem: fs, options: options)
        let segment = storePath + "/0000000000000001.seg"
        var pages: [UInt64: [UInt8]] = [:]
        var states: [(end: Int, pages: [UInt64: [UInt8]])] = [(try #require(fs.contents(of: segment)).count, [:])]
        for _ in 0..<12 {
            try Self.change(writer, &pages, &random, size: 1500)
            states.append((try #require(fs.contents(of: segment)).count, pages))
        }
        let files = fs.allFiles()
        let full = try #require(files[segment])
        func expected(at length: Int) -> [UInt64: [UInt8]] { states.last { $0.end <= length }?.pages ?? [:] }
        var cuts = Array(stride(from: states[0].end, through: full.count, by: 8))
        for _ in 0..<200 { cuts.append(Int.random(in: states[0].end...full.count, using: &random)) }
        for cut in cuts {
            var copy = files
            copy[segment] = Array(full[0..<cut])
            let prefix = MemoryFileSystem(files: copy)
            let follower = try Self.follow(prefix, options: options)
            #expect(try contents(of: follower) == expected(at: cut), "cut at \(cut) of \(full.count)")
        }
        for round in 0..<20 {
            var length = Int.random(in: states[0].end...full.count, using: &random)
            var copy = files
            copy[segment] = Array(full[0..<length])
            let growing = MemoryFileSystem(files: copy)
            let follower = try Self.follow(growing, options: options)
            while length < full.count {
                length = min(full.count, length + Int.random(in: 1...700, using: &random))
                growing.setContents(of: segment, to: Array(full[0..<length]))
                _ = try follower.refresh()
                #expect(try contents(of: follower) == expected(at: length), "round \(round), length \(length) of \(full.count)")
            }
            #expect(follower.followerReloads == 0)
        }
        try writer.close()
    }

    /// Seeded: the writer commits, rolls segments, checkpoints; the follower refreshes at
    /// random moments and equals the writer each time.
    @Test func followsSegmentRollsAndCheckpoints() throws {
        let seed = SeededRandom.seed(default: 35)
        print("followsSegmentRollsAndCheckpoints seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        let writer = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        var pages: [UInt64: [UInt8]] = [:]
        let follower = try Self.follow(fs)
        var refreshes = 0
        for step in 0..<300 {
            try Self.change(writer, &pages, &random)
            if Int.random(in: 0..<10, using: &random) == 0 { try writer.checkpoint() }
            if Int.random(in: 0..<4, using: &random) == 0 {
                _ = try follower.refresh()
                refreshes += 1
                #expect(try contents(of: follower) == pages, "step \(step)")
            }
        }
        _ = try follower.refresh()
        #expect(try contents(of: follower) == pages)
        #expect(refreshes > 50)
        #expect(follower.followerReloads == 0)
        #expect(try #require(follower.followerPosition).segment > 5)
        try writer.close()
        // A writer opening while the follower is open (its lock is free: the follower took none).
        let again = try PageLog.open(directory: storePath, fileSystem: fs, options: smallOptions())
        try Self.change(again, &pages, &random)
        _ = try follower.refresh()
        #expect(try contents(of: follower) == pages)
        try again.close()
    }

    /// The writer compacts while the follower is behind: the segment it was reading is deleted,
    /// or segments after it are. It reloads from the superblock; its old snapshots still read
    /// (their handles keep the deleted files, as on POSIX).
    @Test(arguments: [false, true]) func reloadsWhenCompactionDeletedSegments(realFiles: Bool) throws {
        let directory = realFiles ? try temporaryDirectory() : storePath
        defer { if realFiles { removeDirectory(directory) } }
        let fs: any FileSystem = realFiles ? POSIXFileSystem() : MemoryFileSystem()
        var random = SeededRandom(seed: 36)
        let writer = try PageLog.open(directory: directory, fileSystem: fs, options: smallOptions())
        // Pages kept for good: the first segments stay partly live.
        var pages: [UInt64: [UInt8]] = [:]
        try writer.write { txn in
            for _ in 0..<8 {
                let id = try txn.allocatePageID()
                pages[id] = random.bytes(1500)
                try txn.write(id, bytes: pages[id]!)
            }
        }
        let churn = try writer.write { txn in try (0..<4).map { _ in try txn.allocatePageID() } }
        func overwrite(_ count: Int) throws {
            for _ in 0..<count {
                try writer.write { txn in
                    for id in churn {
                        pages[id] = random.bytes(1200)
                        try txn.write(id, bytes: pages[id]!)
                    }
                }
            }
        }
        try overwrite(6)
        let follower = try Self.follow(fs, directory)
        let held = try follower.snapshot()
        let heldPages = pages
        let followedSegment = try #require(follower.followerPosition).segment
        // Case 1: the follower's own segment is emptied and deleted.
        try overwrite(60)
        try writer.write { txn in for id in pages.keys where !churn.contains(id) { try txn.write(id, bytes: pages[id]!) } }
        let report = try writer.compact(targetAmplification: 1.0)
        #expect(report.deletedSegments.contains(followedSegment))
        #expect(try follower.refresh())
        #expect(follower.followerReloads == 1)
        #expect(try contents(of: follower) == pages)
        for (id, bytes) in heldPages { #expect(try held.read(id)?.bytes == bytes) }
        // Case 2: the segments after the follower's are deleted while its own stays. A page
        // larger than a segment fills one alone; the follower reads it (pending) before its
        // commit frame rolls to the next segment, which the churn then leaves dead.
        try writer.write { txn in
            let id = try txn.allocatePageID()
            pages[id] = random.bytes(20_000)
            try txn.write(id, bytes: pages[id]!)
            #expect(try !follower.refresh())
        }
        let position = try #require(follower.followerPosition)
        try overwrite(60)
        let second = try writer.compact(targetAmplification: 1.0)
        #expect(second.deletedSegments.contains(position.segment + 1), "deleted \(second.deletedSegments)")
        #expect(!second.deletedSegments.contains(position.segment))
        #expect(try follower.refresh())
        #expect(try contents(of: follower) == pages)
        #expect(follower.followerReloads == 2)
        try follower.close()
        try writer.close()
    }

    /// A migration-style rollback: checkpoints held, commits made (across a segment roll), the
    /// writer closed and the log cut back (`PageLog.rollBack`). The follower that saw those
    /// commits reloads and sees the state before them — also when the writer appended again past
    /// where the follower had read before it refreshed; never a mix of both.
    @Test(arguments: [false, true]) func reloadsAfterARollback(realFiles: Bool) throws {
        let seed = SeededRandom.seed(default: 37)
        print("reloadsAfterARollback seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        var random = SeededRandom(seed: seed)
        for (round, (rollsSegment, appendsAgain)) in [(false, false), (false, true), (true, false), (true, true)].enumerated() {
            let directory = realFiles ? try temporaryDirectory() : storePath + "\(round)"
            defer { if realFiles { removeDirectory(directory) } }
            let fs: any FileSystem = realFiles ? POSIXFileSystem() : MemoryFileSystem()
            var options = smallOptions()
            options.segmentSize = rollsSegment ? 16 << 10 : 1 << 20
            var pages: [UInt64: [UInt8]] = [:]
            var writer = try PageLog.open(directory: directory, fileSystem: fs, options: options)
            for _ in 0..<10 { try Self.change(writer, &pages, &random) }
            try writer.checkpoint()
            for _ in 0..<3 { try Self.change(writer, &pages, &random) }
            let baseline = pages
            // The "migration": a rollback point, then commits with checkpoints held.
            let point = try writer.write { txn in
                txn.holdCheckpoints(true)
                try txn.write(0, bytes: [0xAA])
                return txn.startPosition
            }
            pages[0] = [0xAA]
            let follower = try Self.follow(fs, directory, options: options)
            for _ in 0..<(rollsSegment ? 12 : 4) { try Self.change(writer, &pages, &random, size: 2000) }
            #expect(try follower.refresh())
            #expect(try contents(of: follower) == pages)
            let migrating = try follower.snapshot()
            let followed = try #require(follower.followerPosition)
            if rollsSegment { #expect(followed.segment > point.segment) }
            try writer.close()
            try PageLog.rollBack(directory: directory, fileSystem: fs, to: point)
            pages = baseline
            if appendsAgain {
                // The writer opens again and appends other commits past where the follower read —
                // relaxed, so no commit's durable position proves the follower's stop torn: only
                // the last frame it read, rewritten, shows the cut.
                writer = try PageLog.open(directory: directory, fileSystem: fs, options: options)
                let hex = String(followed.segment, radix: 16)
                let followedFile = directory + "/" + String(repeating: "0", count: 16 - hex.count) + hex + ".seg"
                func followedSize() throws -> UInt64 {
                    guard let file = try? fs.openForReading(followedFile) else { return 0 }
                    defer { file.close() }
                    return try file.size()
                }
                var count = 0
                repeat {
                    try Self.change(writer, &pages, &random, size: 2500, durability: .relaxed)
                    count += 1
                } while rollsSegment ? count < 14 : try followedSize() <= followed.offset + 4096
                try writer.close()
            }
            #expect(try follower.refresh(), "round \(round)")
            #expect(follower.followerReloads == 1, "round \(round)")
            #expect(try contents(of: follower) == pages, "round \(round)")
            // The snapshot taken during the "migration" reads its pages before the cut (mapped:
            // checkpointed) or fails with a typed error; it never reads the new bytes as its own.
            for id in try migrating.pageIDs() {
                do { _ = try migrating.read(id) } catch let error as PageLogError { #expect(error.isCorruption, "\(error)") }
            }
            try follower.close()
        }
    }

    /// Bytes after the last frame — a torn or unfinished append — end the log for a follower
    /// without an error; the writer that opens next truncates them and appends in their place
    /// (invariant 6), which the follower then follows. Damage in a sealed segment is still
    /// corruption.
    @Test func aTornTailIsWhereTheWriterAppends() throws {
        var random = SeededRandom(seed: 38)
        var options = smallOptions()
        options.segmentSize = 1 << 20
        options.checkpointInterval = 1 << 30  // every frame after the creation checkpoint is replayed
        options.preallocation = 0  // the file ends where the log does: it is cut by hand
        let segment = storePath + "/0000000000000001.seg"
        var pages: [UInt64: [UInt8]] = [:]
        // A dead writer's files: ten commits, then the first frame of one more, cut short.
        let original = MemoryFileSystem()
        let dead = try PageLog.open(directory: storePath, fileSystem: original, options: options)
        for _ in 0..<10 { try Self.change(dead, &pages, &random) }
        let committed = try #require(original.contents(of: segment)).count
        try dead.write { try $0.write(1, bytes: random.bytes(2000)) }
        var files = original.allFiles()
        files[segment] = Array(try #require(files[segment])[0..<(committed + 1000)])
        let fs = MemoryFileSystem(files: files)
        let before = fs.counters.operations
        let follower = try Self.follow(fs, options: options)
        #expect(try contents(of: follower) == pages)
        #expect(try !follower.refresh())
        #expect(fs.counters.operations == before)
        let writer = try PageLog.open(directory: storePath, fileSystem: fs, options: options)  // truncates at the cut
        for _ in 0..<3 { try Self.change(writer, &pages, &random) }
        #expect(try follower.refresh())
        #expect(try contents(of: follower) == pages)
        #expect(try #require(follower.followerPosition).segment == 1)
        #expect(follower.followerReloads == 0)
        try writer.write { txn in try txn.write(try txn.allocatePageID(), bytes: random.bytes(1_040_000)) }  // rolls to segment 2
        pages = try contents(of: writer)
        #expect(try follower.refresh())
        #expect(try contents(of: follower) == pages)
        #expect(try #require(follower.followerPosition).segment == 2)
        try follower.close()
        // A flipped byte in a frame of segment 1, now sealed (segment 2 says where it ends):
        // corruption for a follower too, not a torn tail.
        var damaged = fs.allFiles()
        damaged[segment]?[committed - 200] ^= 0x40
        let broken = MemoryFileSystem(files: damaged)
        let error = #expect(throws: PageLogError.self) { _ = try Self.follow(broken, options: options) }
        #expect(error?.isCorruption == true, "\(String(describing: error))")
        try writer.close()
    }

    /// On real files, one thread writes while another refreshes: each refresh shows one whole
    /// transaction's state (every page of a transaction carries its generation), never a part.
    @Test func refreshesWhileTheWriterAppends() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        var options = smallOptions()
        options.segmentSize = 64 << 10
        options.writeBufferSize = 2 << 10
        let writer = try PageLog.open(directory: directory, options: options)
        let pages: [UInt64] = Array(1...12)
        try writer.write { txn in for id in pages { try txn.write(id, bytes: [0]) } }
        let follower = try Self.follow(POSIXFileSystem(), directory, options: options)
        let done = Atomic<Bool>(false)
        let problems = Lock<[String]>([])
        let generations = 400
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            if worker == 0 {
                for generation in 1...generations {
                    do {
                        try writer.write(durability: generation % 3 == 0 ? .durable : .relaxed) { txn in
                            let stamp = [UInt8(generation >> 8), UInt8(generation & 0xFF)]
                            for id in pages { try txn.write(id, bytes: stamp + [UInt8](repeating: UInt8(id), count: 300 * Int(id))) }
                        }
                        if generation % 50 == 0 { try writer.checkpoint() }
                    } catch {
                        problems.withLock { $0.append("writer: \(error)") }
                    }
                }
                done.store(true, ordering: .releasing)
            } else {
                var last = 0
                while true {
                    let finished = done.load(ordering: .acquiring)
                    do {
                        _ = try follower.refresh()
                        let snapshot = try follower.snapshot()
                        let values = try pages.map { id -> Int in
                            let bytes = try #require(try snapshot.read(id)).bytes
                            return bytes.count < 2 ? 0 : Int(bytes[0]) << 8 | Int(bytes[1])
                        }
                        if Set(values).count != 1 { problems.withLock { $0.append("a mixed snapshot: \(values)") } }
                        if values[0] < last { problems.withLock { $0.append("went back from \(last) to \(values[0])") } }
                        last = values[0]
                    } catch {
                        problems.withLock { $0.append("follower: \(error)") }
                    }
                    if finished { break }
                }
            }
        }
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0.prefix(5) })")
        _ = try follower.refresh()
        #expect(try follower.read(1)?.bytes.prefix(2) == [UInt8(generations >> 8), UInt8(generations & 0xFF)])
        #expect(follower.followerReloads == 0)
        try follower.close()
        try writer.close()
    }
}
