#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
import Strata
import StrataTestSupport

/// Power loss at every sync point (unsynced writes dropped, kept or torn) of workloads that
/// journal: the reopened store's history is exactly the journal of the committed transactions
/// its records come from — nothing uncommitted, nothing committed durably lost, the data and
/// its journal entry never one without the other — and it stays consistent when the crash
/// comes in the middle of retention (a small size limit deleting the oldest entries commit
/// after commit) or of `deleteHistory` (its bounded batches): `fetchHistory` works, tokens go
/// on from the last one recovered, and a token older than the journal keeps throws
/// `historyTruncated`.
@Suite struct HistoryCrashTests {
    typealias Model = HistoryModelTests
    static let path = "/store"

    static func open(_ fs: MemoryFileSystem, maximumBytes: Int? = 64 << 20, durability: Durability = .durable) throws -> Store {
        var configuration = Store.Configuration()
        configuration.durability = durability
        configuration.storage.automaticCompaction = false
        configuration.history.maximumBytes = maximumBytes
        let schema = try Schema(version: Schema.Version(1, 0, 0), types: [HistoryProject.self, HistoryTask.self, HistoryUrgentTask.self])
        return try Store(at: path, schema: schema, configuration: configuration, fileSystem: fs)
    }

    /// What a run of a workload committed: the records after each transaction (`states[0]`:
    /// before any) with the number of journal entries by then, the entries, the last state
    /// reported durable, and the outcome of a transaction cut short by the crash.
    struct Run {
        var states: [[Model.Key: Model.ModelRecord]] = [[:]]
        var entryCounts: [Int] = [0]
        var entries: [Model.ModelTransaction] = []
        var lastDurable = 0
        var inDoubt: (Model.Outcome, author: String?, viaContext: Bool)?

        /// Runs `count` random transactions (and a reopen now and then) on the store at
        /// `path`, until they end or the power is cut.
        init(_ fs: MemoryFileSystem, seed: UInt64, count: Int, maximumBytes: Int?) {
            var random = SeededRandom(seed: seed)
            do {
                var store = try HistoryCrashTests.open(fs, maximumBytes: maximumBytes)
                for step in 0..<count {
                    let author = Model.authors[Int(random.next() % UInt64(Model.authors.count))]
                    let viaContext = random.next() % 3 == 0
                    var pending: Model.Outcome?
                    do {
                        let outcome = try Model.randomTransaction(store, records: states[states.count - 1], author: author, viaContext: viaContext,
                                                                  operations: 1 + Int(random.next() % 4), using: &random, pending: &pending,
                                                                  "transaction \(step), seed \(seed)")
                        record(outcome, author: author, viaContext: viaContext)
                        lastDurable = states.count - 1  // durable: synced before the commit returned
                    } catch {
                        inDoubt = pending.map { ($0, author, viaContext) }
                        return
                    }
                    if random.next() % 10 == 0 {
                        try store.close()
                        store = try HistoryCrashTests.open(fs, maximumBytes: maximumBytes)
                    }
                }
                try store.close()
            } catch {}
        }

        mutating func record(_ outcome: Model.Outcome, author: String?, viaContext: Bool) {
            states.append(outcome.records)
            if !outcome.changes.isEmpty {
                entries.append(Model.ModelTransaction(token: UInt64(entries.count + 1), author: author, changes: outcome.changes, viaContext: viaContext))
            }
            entryCounts.append(entries.count)
        }

        /// The committed transactions a recovered store may hold: every one from the last
        /// durable on, and the one in doubt.
        var acceptable: [(records: [Model.Key: Model.ModelRecord], entries: ArraySlice<Model.ModelTransaction>)] {
            var result = (lastDurable..<states.count).map { (states[$0], entries.prefix(entryCounts[$0])) }
            if let (outcome, author, viaContext) = inDoubt {
                var extended = self
                extended.record(outcome, author: author, viaContext: viaContext)
                result.append((extended.states[extended.states.count - 1], extended.entries[...]))
            }
            return result
        }
    }

    /// Checks the recovered journal — tokens contiguous from the oldest kept to the newest,
    /// each entry the model's, `historyTruncated` before the oldest — and returns the oldest
    /// token kept. `entries` are the committed transactions' (token n is `entries[n - 1]`).
    @discardableResult
    static func checkJournal(_ store: Store, entries: ArraySlice<Model.ModelTransaction>, _ where_: String) throws -> UInt64 {
        let oldest = try store.oldestHistoryToken().rawValue
        #expect(try store.currentHistoryToken().rawValue == UInt64(entries.count), "current token (\(where_))")
        #expect(oldest <= UInt64(entries.count), "oldest token \(oldest) (\(where_))")
        let kept = entries.dropFirst(Int(min(oldest, UInt64(entries.count))))
        Model.compare(try store.fetchHistory(), kept, "journal, \(where_)")
        var reverse = HistoryDescriptor(after: HistoryToken(rawValue: oldest))
        reverse.order = .reverse
        reverse.limit = 3
        Model.compare(try store.fetchHistory(reverse), kept.reversed().prefix(3), "newest three, \(where_)")
        if oldest > 0 {
            #expect(throws: StrataError.historyTruncated(requested: HistoryToken(rawValue: oldest - 1), oldestAvailable: HistoryToken(rawValue: oldest)),
                    "historyTruncated (\(where_))") {
                try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: oldest - 1)))
            }
        }
        return oldest
    }

    /// After recovery: one more transaction gets the next token, and the journal stays whole.
    static func writeOnce(_ store: Store, entries: ArraySlice<Model.ModelTransaction>, _ where_: String) throws {
        let title = "after the crash"
        let id = try store.write(author: "recovery") { try $0.insert(HistoryTask(title: title, done: false, priority: 0)) }
        var next = Array(entries)
        next.append(Model.ModelTransaction(token: UInt64(next.count + 1), author: "recovery",
                                           changes: [Model.ModelChange(kind: .insert, entity: "HistoryTask", id: id.rawValue)], viaContext: false))
        try checkJournal(store, entries: next[...], "after one more commit, \(where_)")
    }

    /// Sync points to test: all in release builds, every 8th in debug ones.
    static func points(_ syncs: Int) -> [Int] {
        #if DEBUG
        Array(stride(from: 0, through: syncs, by: 8))
        #else
        Array(0...syncs)
        #endif
    }

    /// Durable transactions through `Context.save()` and `Store.write(author:)` (journal on),
    /// with reopens: after a crash at any sync point the records are one committed state at or
    /// after the last durable one and the journal is exactly that state's.
    @Test(arguments: [false, true])
    func crashAtEverySyncPointOfJournaledCommits(smallJournal: Bool) throws {
        // With a 1,500-byte limit, retention deletes the oldest entries in most commits.
        let seed = SeededRandom.seed(default: smallJournal ? 0x4157_C2A5 : 0x4157_C2A4)
        let maximumBytes: Int? = smallJournal ? 1_500 : nil
        let count = smallJournal ? 90 : 40
        print("HistoryCrashTests(smallJournal: \(smallJournal)) seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        let reference = MemoryFileSystem()
        let clean = Run(reference, seed: seed, count: count, maximumBytes: maximumBytes)
        #expect(clean.states.count == count + 1 && clean.inDoubt == nil)
        do {
            let store = try Self.open(reference, maximumBytes: maximumBytes)
            let oldest = try Self.checkJournal(store, entries: clean.entries[...], "clean run, seed \(seed)")
            #expect(smallJournal == (oldest > 0), "retention deleted \(oldest) entries in the clean run")
            try store.close()
        }
        let syncs = reference.counters.syncs
        var tested = 0, truncated = 0
        for point in Self.points(syncs) {
            for mode in MemoryFileSystem.CrashMode.allCases {
                let where_ = "sync point \(point) of \(syncs), mode \(mode), seed \(seed)"
                var random = SeededRandom(seed: seed &+ UInt64(point) &* 3 &+ UInt64(mode.hashValue & 3))
                let (fs, run) = MemoryFileSystem.runUntilPowerCut(atSync: point, mode: mode, using: &random) { fs in
                    Run(fs, seed: seed, count: count, maximumBytes: maximumBytes)
                }
                let store = try Self.open(fs, maximumBytes: maximumBytes)
                let recovered = try Model.storedRecords(store)
                guard let committed = run.acceptable.first(where: { $0.records == recovered }) else {
                    Issue.record("the records are no committed state at or after the last durable one (\(where_))")
                    try store.close()
                    continue
                }
                if try Self.checkJournal(store, entries: committed.entries, where_) > 0 { truncated += 1 }
                try Self.writeOnce(store, entries: committed.entries, where_)
                try store.close()
                tested += 1
            }
        }
        print("HistoryCrashTests(smallJournal: \(smallJournal)): \(tested) crash points, \(count) transactions, \(syncs) syncs; \(truncated) recovered journals truncated by retention")
        #expect(tested == 3 * Self.points(syncs).count)
    }

    /// How a long journal is cut down: `deleteHistory`, or the size limit lowered.
    enum Cut: String, CaseIterable, Sendable { case deleteHistory, retention }

    /// A journal of 17,000 entries (one part each) cut down in bounded batches, each its own
    /// commit: `deleteHistory(before:)` deletes in batches of 8,192 parts after the commit that
    /// raises the horizon; reopened with a 2,000-byte limit, each of five commits deletes 256
    /// of the oldest parts. After a crash at any sync point of it (and of the commits and the
    /// close after it) the journal is whole from its oldest token kept to the newest, with no
    /// gap, `historyTruncated` below it — and once `deleteHistory` returned, only the entries
    /// after the deleted ones remain.
    @Test(arguments: Cut.allCases)
    func crashAtEverySyncPointOfBatchedDeletes(cut: Cut) throws {
        let seed = SeededRandom.seed(default: 0x4157_DE1E)
        print("HistoryCrashTests(\(cut)) seed \(seed) (set STRATA_TEST_SEED to reproduce)")
        #if DEBUG
        let count = 9_000
        #else
        let count = 17_000
        #endif
        let keptFrom = UInt64(count - 9)  // deleteHistory(before:) this token
        // The journal, built once: one insert a transaction, by varied authors.
        let base = MemoryFileSystem()
        var entries: [Model.ModelTransaction] = []
        do {
            let store = try Self.open(base, durability: .relaxed)
            for index in 0..<count {
                let author = Model.authors[index % Model.authors.count]
                let id = try store.write(author: author) { try $0.insert(HistoryTask(title: "t\(index)", done: false, priority: index)) }
                entries.append(Model.ModelTransaction(token: UInt64(index + 1), author: author,
                                                      changes: [Model.ModelChange(kind: .insert, entity: "HistoryTask", id: id.rawValue)], viaContext: false))
            }
            try store.close()
        }
        let files = base.allFiles()

        struct Phase { var deleted = false; var writes = 0 }
        func phase(_ fs: MemoryFileSystem) -> Phase {
            var phase = Phase()
            do {
                let store = try Self.open(fs, maximumBytes: cut == .retention ? 2_000 : 64 << 20)
                if cut == .deleteHistory {
                    try store.deleteHistory(before: HistoryToken(rawValue: keptFrom))
                    phase.deleted = true
                }
                for index in 1...(cut == .retention ? 5 : 1) {
                    try store.write(author: "later") { _ = try $0.insert(HistoryProject(code: "late \(index)", budget: index)) }
                    phase.writes += 1
                }
                try store.close()
            } catch {}
            return phase
        }
        let reference = MemoryFileSystem(files: files)
        #expect(phase(reference).writes > 0)
        let syncs = reference.counters.syncs
        var tested = 0, oldestTokens: [UInt64: Int] = [:]
        for point in Self.points(syncs) {
            for mode in MemoryFileSystem.CrashMode.allCases {
                let where_ = "\(cut), sync point \(point) of \(syncs), mode \(mode), seed \(seed)"
                var random = SeededRandom(seed: seed &+ UInt64(point) &* 3 &+ UInt64(mode.hashValue & 3))
                let fs = MemoryFileSystem(files: files)
                fs.setFaultInjector { ($0.kind == .sync || $0.kind == .syncDirectory) && $0.syncIndex == point ? .crash : nil }
                let done = phase(fs)
                fs.setFaultInjector(nil)
                fs.simulateCrash(mode: mode, using: &random)

                let store = try Self.open(fs)
                let late = try Context(store).fetch(FetchDescriptor<HistoryProject>()).map(\.id.rawValue)
                #expect(late == Array(0..<UInt64(late.count)).map { $0 + 1 } && late.count >= done.writes && late.count <= done.writes + 1,
                        "late commits \(late) after \(done.writes) durable ones (\(where_))")
                var committed = entries[...]
                for id in late {
                    committed.append(Model.ModelTransaction(token: UInt64(committed.count + 1), author: "later",
                                                            changes: [Model.ModelChange(kind: .insert, entity: "HistoryProject", id: id)], viaContext: false))
                }
                let oldest = try Self.checkJournal(store, entries: committed, where_)
                switch cut {
                case .deleteHistory:
                    #expect(oldest == 0 || oldest == keptFrom - 1, "oldest token \(oldest) (\(where_))")
                    #expect(!done.deleted || oldest == keptFrom - 1, "deleteHistory returned, yet the journal is whole (\(where_))")
                case .retention:
                    #expect(late.isEmpty || oldest > 0, "a commit over the size limit deleted nothing (\(where_))")
                }
                oldestTokens[oldest, default: 0] += 1
                try Self.writeOnce(store, entries: committed, where_)
                try store.close()
                tested += 1
            }
        }
        print("HistoryCrashTests(\(cut)): \(tested) crash points of \(syncs + 1) syncs × 3 modes; oldest tokens recovered: \(oldestTokens.sorted { $0.key < $1.key })")
        #expect(tested == 3 * Self.points(syncs).count)
    }
}
