import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import Testing
import StrataIO
import Strata
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A record of a numbered batch: batch `b` inserts its records (`touched` 0) and marks every
/// record of batch `b - 1` touched by `b`, in one transaction. A committed state after batch
/// `k` is therefore exactly: batches 1…k, each whole, batches before `k` touched by the next,
/// batch `k` untouched — which any partial or mixed state breaks.
struct BackupEntry: PersistentRecord, Equatable {
    static var attributeOptions: [String: Attribute.Options] { ["batch": [.indexed], "code": [.unique]] }
    var batch: Int
    var touched: Int
    var code: String
    var note: String
}

/// `Store.backup(to:progress:)` (issue 21, Architecture.md invariant 34): a backup taken while
/// another thread or another process commits holds exactly one committed state; a failure at
/// any I/O leaves no destination; progress goes forward to the total; history and indexes
/// survive the copy.
@Suite(.serialized) struct BackupTests {
    static let perBatch = 40

    static func configuration(readOnly: Bool = false) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.isReadOnly = readOnly
        configuration.durability = .relaxed
        configuration.storage.segmentSize = 64 << 10  // many segments: rolls and compactions during a backup
        return configuration
    }

    /// Commits batch `batch` in one transaction (see `BackupEntry`).
    static func commitBatch(_ batch: Int, to store: Store, random: inout SeededRandom) throws {
        let filler = String(repeating: "n", count: Int(random.next() % 120))
        let context = Context(store)
        context.author = "batch \(batch)"
        let previous = batch - 1
        for entry in try context.fetch(FetchDescriptor<BackupEntry>(predicate: #Predicate { $0.batch == previous })) {
            var value = entry.record
            value.touched = batch
            try context.update(entry.id, to: value)
        }
        for index in 0..<perBatch {
            _ = try context.insert(BackupEntry(batch: batch, touched: 0, code: "b\(batch)-\(index)", note: "entry \(index) " + filler))
        }
        try context.save()
    }

    /// Opens the backup at `folder` and returns the last batch `k` it holds, checking that it is
    /// a committed state: batches 1…k whole, with their codes, every batch before `k` touched by
    /// the next and `k` untouched, nothing else; and that it verifies.
    static func committedBatch(in folder: String, fileSystem: MemoryFileSystem? = nil) throws -> Int {
        let store: Store
        if let fileSystem {
            store = try Store(at: folder, schema: Schema(version: Schema.Version(1, 0, 0), types: [BackupEntry.self]),
                              configuration: configuration(readOnly: true), fileSystem: fileSystem)
        } else {
            store = try Store(at: folder, for: [BackupEntry.self], configuration: configuration(readOnly: true))
        }
        defer { try? store.close() }
        #expect(try store.verify().isValid)
        let entries = try Context(store).fetch(FetchDescriptor<BackupEntry>()).map(\.record)
        let batches = Dictionary(grouping: entries, by: \.batch)
        let last = batches.keys.max() ?? 0
        #expect(Set(batches.keys) == Set(last == 0 ? [] : Array(1...last)), "batches \(batches.keys.sorted())")
        for (batch, records) in batches {
            #expect(Set(records.map(\.code)) == Set((0..<perBatch).map { "b\(batch)-\($0)" }), "batch \(batch)")
            let touched = Set(records.map(\.touched))
            #expect(touched == [batch == last ? 0 : batch + 1], "batch \(batch) of \(last): touched \(touched)")
        }
        // Index reads agree with the scan.
        for batch in [1, last / 2, last] where batch > 0 {
            #expect(try Context(store).fetchCount(FetchDescriptor<BackupEntry>(predicate: #Predicate { $0.batch == batch })) == perBatch)
        }
        return last
    }

    // MARK: Another thread commits

    /// A writer thread commits numbered batches (with checkpoints and compactions deleting
    /// segments) while backups are taken from the writing store and from a read-only store of
    /// the same folder: each backup holds exactly one committed state, at least the one
    /// committed before it started and at most the one committed after it returned.
    @Test func aBackupWhileAnotherThreadCommitsHoldsOneCommittedState() throws {
        let seed = SeededRandom.seed(default: 0xBAC0_0001)
        print("BackupTests.aBackupWhileAnotherThreadCommitsHoldsOneCommittedState seed: \(seed)")
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [BackupEntry.self], configuration: Self.configuration())
        var random = SeededRandom(seed: seed)
        for batch in 1...3 { try Self.commitBatch(batch, to: store, random: &random) }
        let committed = Atomic<Int>(3)
        let stop = Atomic<Bool>(false)
        let writerError = Lock<String?>(nil)
        let writerDone = DispatchSemaphore(value: 0)
        let writerSeed = random.next()
        DispatchQueue.global().async {
            var random = SeededRandom(seed: writerSeed)
            var batch = 4
            do {
                while !stop.load(ordering: .acquiring) && batch <= 2_000 {
                    try Self.commitBatch(batch, to: store, random: &random)
                    committed.store(batch, ordering: .releasing)
                    if batch % 5 == 0 { try store.checkpoint() }
                    if batch % 7 == 0 { try store.compact() }
                    batch += 1
                }
            } catch {
                writerError.withLock { $0 = "\(error)" }
            }
            writerDone.signal()
        }
        let reader = try Store(at: folder, for: [BackupEntry.self], configuration: Self.configuration(readOnly: true))
        var results: [(from: String, before: Int, last: Int, after: Int)] = []
        for round in 0..<6 {
            let source = round % 2 == 0 ? store : reader
            let destination = folder + "-backup-\(round)"
            defer { removeDirectory(destination) }
            let before = committed.load(ordering: .acquiring)
            // The copy waits, once pinned, for the writer to commit another batch: every backup
            // overlaps a commit, whatever the machine's speed.
            var overlapped = false
            try source.backup(to: destination) { _ in
                guard !overlapped else { return }
                overlapped = true
                let target = committed.load(ordering: .acquiring) + 1
                #expect(ReaderProcessTests.wait { committed.load(ordering: .acquiring) >= target || writerError.withLock { $0 } != nil })
            }
            let after = committed.load(ordering: .acquiring)
            #expect(after > before)
            #expect(!FileManager.default.fileExists(atPath: destination + ".tmp"))
            let last = try Self.committedBatch(in: destination)
            results.append((source === store ? "writer" : "reader", before, last, after))
            // The state a backup holds is one committed between its start and its end (`committed`
            // is set once a batch's commit returned: the backup may hold the next one already).
            #expect(last >= before && last <= after + 1, "round \(round): batches \(before)…\(after), backup holds \(last)")
        }
        stop.store(true, ordering: .releasing)
        writerDone.wait()
        try reader.close()
        try store.close()
        print("BackupTests: backups (source, committed before, held, committed after): \(results)")
        #expect(writerError.withLock { $0 } == nil, "writer: \(writerError.withLock { $0 } ?? "")")
    }

    // MARK: Another process commits

    /// Run by `aBackupWhileAnotherProcessCommitsHoldsOneCommittedState` as a child process:
    /// commits batches to the store at STRATA_BACKUP_STORE (checkpointing and compacting as it
    /// goes) until STRATA_BACKUP_STOP appears, then reports the last batch to STRATA_BACKUP_REPORT.
    @Test func childCommitsBatchesUntilStopped() throws {
        guard let folder = getenv("STRATA_BACKUP_STORE").map({ String(cString: $0) }),
              let stopFile = getenv("STRATA_BACKUP_STOP").map({ String(cString: $0) }),
              let report = getenv("STRATA_BACKUP_REPORT").map({ String(cString: $0) }) else { return }
        do {
            let store = try Store(at: folder, for: [BackupEntry.self], configuration: Self.configuration())
            var random = SeededRandom(seed: 0xC41D)
            var batch = 1
            while readTextFile(stopFile) == nil && batch <= 5_000 {
                try Self.commitBatch(batch, to: store, random: &random)
                if batch % 5 == 0 { try store.checkpoint() }
                if batch % 7 == 0 { try store.compact() }
                batch += 1
            }
            try store.close()
            writeTextFile(report, "done \(batch - 1)")
        } catch {
            writeTextFile(report, "\(error)")
        }
    }

    /// A child process commits batches while this process, reading the store read-only, backs
    /// it up: each backup holds one committed state, no older than what the reader saw before.
    @Test func aBackupWhileAnotherProcessCommitsHoldsOneCommittedState() throws {
        guard getenv("STRATA_BACKUP_STORE") == nil else { return }
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Store(at: folder, for: [BackupEntry.self], configuration: Self.configuration()).close()
        let stopFile = folder + "-stop", report = folder + "-report"
        defer { unlink(stopFile); unlink(report) }
        let child = ChildRun("BackupTests/childCommitsBatchesUntilStopped",
                             environment: ["STRATA_BACKUP_STORE": folder, "STRATA_BACKUP_STOP": stopFile, "STRATA_BACKUP_REPORT": report])
        let reader = try Store(at: folder, for: [BackupEntry.self], configuration: Self.configuration(readOnly: true))
        func seen() throws -> Int {
            _ = try reader.refresh()
            return try Context(reader).fetchCount(FetchDescriptor<BackupEntry>()) / Self.perBatch
        }
        #expect(try ReaderProcessTests.wait { try seen() >= 3 })
        var held: [(before: Int, last: Int)] = []
        for round in 0..<4 {
            let destination = folder + "-backup-\(round)"
            defer { removeDirectory(destination) }
            let before = try seen()
            try reader.backup(to: destination)
            held.append((before, try Self.committedBatch(in: destination)))
        }
        writeTextFile(stopFile, "stop")
        #expect(child.wait() == 0)
        let childReport = readTextFile(report) ?? "no report"
        print("BackupTests: backups of a store another process writes (seen before, held): \(held); child: \(childReport)")
        #expect(childReport.hasPrefix("done "), "child: \(childReport)")
        let lastCommitted = Int(childReport.dropFirst("done ".count)) ?? 0
        for (before, last) in held { #expect(last >= before && last <= lastCommitted, "seen \(before), held \(last), child committed \(lastCommitted)") }
        try reader.close()
    }

    // MARK: Failures

    static let memoryPath = "/stores/app"
    static let memoryDestination = "/backups/app"

    static func memoryStore(_ fs: MemoryFileSystem, batches: Int) throws -> Store {
        let schema = try Schema(version: Schema.Version(1, 0, 0), types: [BackupEntry.self])
        var configuration = Self.configuration()
        configuration.storage.automaticCompaction = false
        let store = try Store(at: memoryPath, schema: schema, configuration: configuration, fileSystem: fs)
        var random = SeededRandom(seed: 0xFA11)
        for batch in 0..<batches { try commitBatch(batch + 1, to: store, random: &random) }
        return store
    }

    /// Every I/O call of a backup (writing, syncing, creating, renaming into place) failing in
    /// turn: the backup throws that error, nothing is at the destination or beside it, and the
    /// store's files are as they were; once nothing fails the backup is whole.
    @Test func aFailureAtAnyStepLeavesNoDestination() throws {
        let fs = MemoryFileSystem()
        let store = try Self.memoryStore(fs, batches: 12)
        try store.checkpoint()
        let storeFiles = fs.allFiles().filter { $0.key.hasPrefix(Self.memoryPath + "/") }
        var failing = 0
        while true {
            let seen = Atomic<Int>(0), target = failing
            fs.setFaultInjector { operation in
                guard operation.path.hasPrefix("/backups") else { return nil }
                return seen.add(1, ordering: .relaxed).oldValue == target ? .fail(.ioError) : nil
            }
            do {
                try store.backup(to: Self.memoryDestination)
                fs.setFaultInjector(nil)
                break
            } catch {
                fs.setFaultInjector(nil)
                guard case StrataError.io = error else {
                    Issue.record("I/O call \(failing) of the backup failing threw \(error)")
                    break
                }
                #expect(!fs.fileExists(Self.memoryDestination), "call \(failing) failing left the destination")
                #expect(!fs.fileExists(Self.memoryDestination + ".tmp"), "call \(failing) failing left the temporary folder")
                #expect(fs.allFiles().filter { $0.key.hasPrefix(Self.memoryPath + "/") } == storeFiles)
            }
            failing += 1
        }
        print("BackupTests: \(failing) I/O calls of a backup failed in turn")
        #expect(failing > 10)  // every file written and synced, the folders synced, the rename
        #expect(try Self.committedBatch(in: Self.memoryDestination, fileSystem: fs) == 12)
        try store.close()
    }

    /// An existing destination — a store, a file, an empty folder — is refused with a typed
    /// error and left as it was; a temporary folder an interrupted backup left is replaced.
    @Test func anExistingDestinationIsRefusedAndLeftAsItWas() throws {
        let fs = MemoryFileSystem()
        let store = try Self.memoryStore(fs, batches: 3)
        try store.backup(to: Self.memoryDestination)
        let first = fs.allFiles().filter { $0.key.hasPrefix(Self.memoryDestination + "/") }
        var random = SeededRandom(seed: 0xB0C5)
        try Self.commitBatch(4, to: store, random: &random)
        #expect(throws: StrataError.destinationExists(path: Self.memoryDestination)) { try store.backup(to: Self.memoryDestination) }
        #expect(throws: StrataError.destinationExists(path: Self.memoryDestination)) { try store.backup(to: Self.memoryDestination + "/") }
        #expect(fs.allFiles().filter { $0.key.hasPrefix(Self.memoryDestination + "/") } == first)
        #expect(!fs.fileExists(Self.memoryDestination + ".tmp"))
        let file = try fs.openFile("/backups/file", create: true)
        try file.write([1, 2, 3], at: 0)
        file.close()
        #expect(throws: StrataError.destinationExists(path: "/backups/file")) { try store.backup(to: "/backups/file") }
        #expect(fs.contents(of: "/backups/file") == [1, 2, 3])
        try fs.createDirectory("/backups/empty")
        #expect(throws: StrataError.destinationExists(path: "/backups/empty")) { try store.backup(to: "/backups/empty") }
        // What a crash during a backup leaves: a partial copy beside the destination.
        try fs.createDirectory("/backups/second.tmp")
        let partial = try fs.openFile("/backups/second.tmp/superblock", create: true)
        try partial.write([0xFF], at: 0)
        partial.close()
        try store.backup(to: "/backups/second")
        #expect(!fs.fileExists("/backups/second.tmp"))
        #expect(try Self.committedBatch(in: "/backups/second", fileSystem: fs) == 4)
        #expect(try Self.committedBatch(in: Self.memoryDestination, fileSystem: fs) == 3)
        try store.close()
        #expect(throws: StrataError.closed) { try store.backup(to: "/backups/third") }
        #expect(!fs.fileExists("/backups/third") && !fs.fileExists("/backups/third.tmp"))
    }

    /// A source whose page frame is damaged gives a copy that fails verification, `.frames` as
    /// `.full`: the backup throws `corruption` naming the copy's frame, and leaves nothing.
    @Test func aCopyThatFailsVerificationLeavesNoDestination() throws {
        let fs = MemoryFileSystem()
        try Self.memoryStore(fs, batches: 20).close()
        // The largest segment, one byte flipped in its middle: a live page's frame there is damaged.
        let (segment, bytes) = try #require(fs.allFiles().filter { $0.key.hasPrefix(Self.memoryPath + "/") && $0.key.hasSuffix(".seg") }
            .max { $0.value.count < $1.value.count })
        var offset = bytes.count / 2
        var store: Store?
        // A byte of dead space changes nothing: move on until verify() finds the damage.
        while offset < bytes.count {
            var damaged = bytes
            damaged[offset] ^= 0x5A
            fs.setContents(of: segment, to: damaged)
            let opened = try Self.memoryStore(fs, batches: 0)
            if try !opened.verify().isValid {
                store = opened
                break
            }
            try opened.close()
            fs.setContents(of: segment, to: bytes)
            offset += 997
        }
        let damagedStore = try #require(store, "no live frame found to damage")
        for level in [BackupVerification.frames, .full] {
            do {
                try damagedStore.backup(to: Self.memoryDestination, verification: level)
                Issue.record("the backup of a damaged store succeeded (\(level))")
            } catch StrataError.corruption(let file, _, let reason) {
                #expect(file.hasPrefix(Self.memoryDestination + ".tmp/") && reason.contains("the backup's copy failed verification"),
                        "\(level): \(file): \(reason)")
            }
            #expect(!fs.fileExists(Self.memoryDestination) && !fs.fileExists(Self.memoryDestination + ".tmp"))
        }
        try damagedStore.close()
    }

    /// `.frames` (the default) checks every page's frame of the copy without decoding records; the copy holds
    /// the same records. A cancelled backup stops and leaves nothing.
    @Test func framesVerificationAndCancellation() throws {
        let fs = MemoryFileSystem()
        let store = try Self.memoryStore(fs, batches: 15)
        let full = try store.backup(to: "/backups/full", verification: .full)
        let frames = try store.backup(to: "/backups/frames")
        #expect(frames.verification.isValid && frames.verification.pages == full.verification.pages && frames.verification.pages > 15)
        #expect(frames.verification.records == 0 && full.verification.records == 15 * Self.perBatch)
        #expect(try Self.committedBatch(in: "/backups/frames", fileSystem: fs) == 15)
        var pieces = 0
        #expect(throws: CancellationError.self) {
            try store.backup(to: "/backups/cancelled", verification: .full, progress: nil, isCancelled: {
                pieces += 1
                return pieces > 3
            })
        }
        #expect(pieces == 4)
        #expect(!fs.fileExists("/backups/cancelled") && !fs.fileExists("/backups/cancelled.tmp"))
        try store.close()
    }

    // MARK: Progress

    /// Progress never goes back, ends at the total — the bytes of the backup's files — marks
    /// the verification, then the end; the report says the same.
    @Test func progressGoesForwardToTheTotal() throws {
        let fs = MemoryFileSystem()
        let store = try Self.memoryStore(fs, batches: 40)
        var events: [BackupProgress] = []
        let report = try store.backup(to: Self.memoryDestination, verification: .full) { events.append($0) }
        let copied = fs.allFiles().filter { $0.key.hasPrefix(Self.memoryDestination + "/") }
        #expect(report.bytes == copied.values.reduce(0) { $0 + UInt64($1.count) })
        #expect(report.files == copied.count)
        #expect(report.verification.isValid && report.verification.records == 40 * Self.perBatch)
        #expect(events.count > copied.count)  // per piece, and segments are 64 KiB here
        for (earlier, later) in zip(events, events.dropFirst()) {
            #expect(later.bytesCopied >= earlier.bytesCopied && later.bytesTotal == earlier.bytesTotal)
            #expect(!earlier.isFinished)
            #expect(!earlier.isVerifying || later.isVerifying || later.isFinished)
        }
        #expect(events.allSatisfy { $0.bytesTotal == report.bytes && $0.bytesCopied <= $0.bytesTotal })
        #expect(events.filter(\.isVerifying).count == 1)
        #expect(events.last?.bytesCopied == report.bytes && events.last?.isFinished == true && events.last?.isVerifying == false)
        #expect(events.last?.fractionDone == 1)
        try store.close()
    }

    /// The `async` variant and the event stream deliver the same backup.
    @Test func asyncBackupsStreamProgressThenTheReport() async throws {
        let fs = MemoryFileSystem()
        let store = try Self.memoryStore(fs, batches: 10)
        var progress: [BackupProgress] = []
        var finished: BackupReport?
        for try await event in store.backingUp(to: Self.memoryDestination) {
            switch event {
            case .progress(let step): progress.append(step)
            case .finished(let report): finished = report
            }
        }
        #expect(finished?.bytes == progress.last?.bytesTotal && progress.last?.isFinished == true)
        let counter = Atomic<Int>(0)
        let report = try await store.backup(to: "/backups/async") { _ in counter.add(1, ordering: .relaxed) }
        #expect(report.bytes == finished?.bytes && counter.load(ordering: .relaxed) > 2)
        #expect(try Self.committedBatch(in: "/backups/async", fileSystem: fs) == 10)
        try store.close()
    }

    // MARK: History and indexes

    /// A backup of a store with a history journal, consumers and indexes reopens with the
    /// same journal (every transaction, author and change), the same consumers, and indexes
    /// that answer as the source's do.
    @Test func historyAndIndexesSurviveTheBackup() throws {
        let folder = try temporaryDirectory(), backups = try temporaryDirectory()
        defer { removeDirectory(folder); removeDirectory(backups) }
        let destination = backups + "/backup"
        let store = try Store(at: folder, for: [BackupEntry.self], configuration: Self.configuration())
        var random = SeededRandom(seed: 0x4157)
        try Self.commitBatch(1, to: store, random: &random)
        try store.setHistoryCursor(try store.currentHistoryToken(), for: "sync")
        for batch in 2...6 { try Self.commitBatch(batch, to: store, random: &random) }
        let context = Context(store)
        _ = try context.delete(BackupEntry.self, where: #Predicate { $0.batch == 2 })
        try context.save()
        try Self.commitBatch(7, to: store, random: &random)
        try store.backup(to: destination)
        let copy = try Store(at: destination, for: [BackupEntry.self], configuration: Self.configuration())
        #expect(try copy.fetchHistory() == store.fetchHistory())
        let authors = try copy.fetchHistory().map(\.author)
        #expect(authors.count >= 7 && authors.contains("batch 2"), "\(authors)")
        #expect(try copy.historyConsumers() == store.historyConsumers())
        for code in ["b1-0", "b2-3", "b7-39", "b9-0"] {
            let fetched = { (s: Store) in try Context(s).fetch(FetchDescriptor<BackupEntry>(predicate: #Predicate { $0.code == code })).map(\.record) }
            #expect(try fetched(copy) == fetched(store), "code \(code)")
        }
        let (sourceReport, copyReport) = (try store.verify(), try copy.verify())
        #expect(copyReport.isValid && copyReport.indexEntries == sourceReport.indexEntries && copyReport.historyParts == sourceReport.historyParts)
        #expect(copyReport.indexEntries > 0 && copyReport.historyParts > 0)
        // The copy is a store of its own: it takes writes.
        try Self.commitBatch(8, to: copy, random: &random)
        #expect(try Context(copy).fetchCount(FetchDescriptor<BackupEntry>()) == Context(store).fetchCount(FetchDescriptor<BackupEntry>()) + Self.perBatch)
        try copy.close()
        try store.close()
    }
}

