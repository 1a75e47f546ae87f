#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO
@_spi(Engine) import Strata
import StrataTestSupport

/// Crash-point enumeration (issue 6, item 5) through the public `Store` API: five operations —
/// commits, a checkpoint, a compaction, a migration along the whole version chain, history
/// retention — each started from a few seeded states (built by `OperationFuzzer` on the
/// in-memory file system), with the power cut at every sync (file or directory) the operation
/// makes, and each unsynced write dropped, kept or torn. After the reboot the store must open
/// and be one committed state at or after the last one reported durable (records, journal,
/// consumers), `verify()` must find nothing, and the next commit must work.
@Suite struct CrashPointFuzzTests {
    enum Operation: String, CaseIterable { case commit, checkpoint, compaction, migration, retention }

    /// A state the operations start from: a closed store's files and the model of its content.
    struct Base {
        var files: [String: [UInt8]]
        var state: FuzzState
        var seed: UInt64
    }

    /// What an operation run reported before it ended (or the power was cut).
    struct Outcome {
        var states: [FuzzState]
        var lastDurable = 0
        var pending: FuzzState?
        var segmentsBefore = 0
        var segmentsAfter = 0
    }

    /// Random operations building each base state (cheap: enough dead space that compaction
    /// deletes segments, in debug builds too).
    static let baseSteps = 120
    #if DEBUG
    static let sampling = 4  // every 4th sync point in debug builds
    #else
    static let sampling = 1
    #endif

    static let path = "/store"

    static func configuration(durability: Durability, journalLimit: Int? = nil) -> Store.Configuration {
        var configuration = Store.Configuration()
        configuration.durability = durability
        configuration.storage.segmentSize = 16 << 10
        configuration.storage.checkpointInterval = 64 << 10
        // Uncompressed: frame sizes do not depend on the journal's timestamps, so every run of
        // an operation makes the same syncs.
        configuration.storage.compression = false
        configuration.storage.automaticCompaction = false
        configuration.history.maximumBytes = journalLimit
        return configuration
    }

    /// Runs seeded random operations from an empty store up to schema `version`, churns every
    /// record twice (dead space for compaction), and closes.
    static func makeBase(seed: UInt64, version: Int) throws -> Base {
        let fs = MemoryFileSystem()
        let fuzzer = OperationFuzzer(fileSystem: fs, path: path, configuration: configuration(durability: .relaxed),
                                     random: SeededRandom(seed: seed), name: "base seed \(seed)")
        try fuzzer.open()
        let migrationSteps = (1..<version).map { $0 * baseSteps / version }
        for step in 0..<baseSteps {
            if migrationSteps.contains(step) { try fuzzer.migrate(to: fuzzer.state.version + 1) } else { try fuzzer.randomStep() }
        }
        try fuzzer.save(FuzzVersions.version(fuzzer.state.version).item)
        for _ in 0..<2 { try churn(fuzzer, FuzzVersions.version(fuzzer.state.version).item) }
        try fuzzer.close()
        return Base(files: fs.allFiles(), state: fuzzer.state, seed: seed)
    }

    /// Rewrites every record's score in one `Store.write`.
    static func churn<T: FuzzItem>(_ fuzzer: OperationFuzzer, _ type: T.Type) throws {
        guard let store = fuzzer.store else { return }
        var next = fuzzer.state.saved
        try store.write { transaction in
            for (id, item) in fuzzer.state.saved.sorted(by: { $0.key < $1.key }) {
                var changed = item
                changed.score = (item.score + 1) % 1_000
                changed = T(changed).model
                try transaction.update(RecordID<T>(rawValue: id), to: T(changed))
                next[id] = changed
            }
        }
        fuzzer.state = fuzzer.state.committing(next, author: nil)
        fuzzer.working = fuzzer.state.saved
    }

    static func segmentCount(_ fs: MemoryFileSystem) -> Int {
        ((try? fs.contentsOfDirectory(path)) ?? []).filter { $0.hasSuffix(".seg") }.count
    }

    // MARK: The operations

    /// Runs `operation` from `base` on `fs` until it ends or the power is cut.
    static func run(_ operation: Operation, from base: Base, on fs: MemoryFileSystem) -> Outcome {
        var outcome = Outcome(states: [base.state])
        outcome.segmentsBefore = segmentCount(fs)
        let durability: Durability = operation == .checkpoint ? .relaxed : .durable
        let fuzzer = OperationFuzzer(fileSystem: fs, path: path,
                                     configuration: configuration(durability: durability, journalLimit: operation == .retention ? 2_000 : nil),
                                     random: SeededRandom(seed: base.seed &+ 0x0C0FFEE), name: "\(operation) from base seed \(base.seed)")
        fuzzer.state = base.state
        do {
            if operation == .migration {
                fuzzer.state.version = FuzzVersions.latest
                _ = try OperationFuzzer.open(path, version: FuzzVersions.latest, configuration: fuzzer.configuration, fileSystem: fs).close()
                outcome.segmentsAfter = segmentCount(fs)
                return outcome
            }
            try fuzzer.open()
            try run(operation, fuzzer, FuzzVersions.version(base.state.version).item, &outcome)
            try fuzzer.close()
            outcome.lastDurable = outcome.states.count - 1  // a clean close syncs everything
        } catch {
            outcome.pending = fuzzer.pending
        }
        outcome.segmentsAfter = segmentCount(fs)
        return outcome
    }

    private static func run<T: FuzzItem>(_ operation: Operation, _ fuzzer: OperationFuzzer, _ type: T.Type, _ outcome: inout Outcome) throws {
        guard let store = fuzzer.store, let context = fuzzer.context else { return }
        /// A context transaction: two inserts, an update and a delete.
        func contextTransaction() throws {
            for _ in 0..<2 {
                let item = fuzzer.randomItem(T.self)
                fuzzer.working[try context.insert(T(item)).rawValue] = item
            }
            if let id = fuzzer.pick(fuzzer.working) {
                let item = fuzzer.randomItem(T.self)
                try context.update(RecordID<T>(rawValue: id), to: T(item))
                fuzzer.working[id] = item
            }
            if let id = fuzzer.pick(fuzzer.working) {
                try context.delete(RecordID<T>(rawValue: id))
                fuzzer.working[id] = nil
            }
            try fuzzer.save(T.self)
            outcome.states.append(fuzzer.state)
        }
        switch operation {
        case .commit:
            // Durable commits: each is the last durable state once it returns.
            try contextTransaction()
            outcome.lastDurable = outcome.states.count - 1
            try fuzzer.bulkWrite(T.self, store)
            outcome.states.append(fuzzer.state)
            outcome.lastDurable = outcome.states.count - 1
            let removed = try context.delete(T.self, where: T.predicate(.scoreAtLeast(800)))
            #expect(removed == fuzzer.working.values.filter { $0.score >= 800 }.count)
            fuzzer.working = fuzzer.working.filter { $0.value.score < 800 }
            try contextTransaction()
            outcome.lastDurable = outcome.states.count - 1
        case .checkpoint:
            // Relaxed commits, made durable by the checkpoint.
            try contextTransaction()
            try contextTransaction()
            try store.checkpoint()
            outcome.lastDurable = outcome.states.count - 1
            try contextTransaction()
        case .compaction:
            try store.compact()
            outcome.lastDurable = 0
            try contextTransaction()
            outcome.lastDurable = outcome.states.count - 1
        case .retention:
            // deleteHistory, a consumer, then a commit that prunes under a 2,000-byte limit.
            let last = fuzzer.state.lastToken
            fuzzer.pending = nil
            var next = fuzzer.state
            next.horizon = max(next.horizon, last / 3)
            fuzzer.pending = next
            try store.deleteHistory(before: HistoryToken(rawValue: last / 3 + 1))
            fuzzer.state = next
            outcome.states.append(next)
            outcome.lastDurable = outcome.states.count - 1
            next.consumers["widget"] = 2 * last / 3
            next.horizon = max(next.horizon, next.consumers.values.min() ?? 0)  // the slowest consumer
            fuzzer.pending = next
            try store.setHistoryCursor(HistoryToken(rawValue: 2 * last / 3), for: "widget")
            fuzzer.state = next
            outcome.states.append(next)
            outcome.lastDurable = outcome.states.count - 1
            try contextTransaction()
            outcome.lastDurable = outcome.states.count - 1
        case .migration:
            break
        }
    }

    // MARK: Checking a recovered store

    /// Opens the rebooted store and checks it against `outcome`; returns a description of what
    /// was recovered (for the figures).
    static func checkRecovered(_ fs: MemoryFileSystem, _ operation: Operation, base: Base, outcome: Outcome, _ where_: String) throws -> Bool {
        if operation == .migration {
            // The old app finds its version untouched, or the store already migrated.
            let copy = MemoryFileSystem(files: fs.allFiles())
            var finished = false
            do {
                let old = try OperationFuzzer.open(path, version: base.state.version, configuration: configuration(durability: .durable), fileSystem: copy)
                let items = try OperationFuzzer.storedItems(old, FuzzVersions.version(base.state.version).item)
                #expect(items == base.state.saved, "the old version changed (\(where_))")
                #expect(try old.verify().isValid, "verify, old app (\(where_))")
                try old.close()
            } catch StrataError.storeIsNewer {
                finished = true
            }
            // The new app finishes it: the records of an uninterrupted run.
            var expected = base.state
            expected.version = FuzzVersions.latest
            expected.saved = FuzzStages.migrate(base.state.saved, from: base.state.version, to: FuzzVersions.latest)
            try checkStore(fs, version: FuzzVersions.latest, candidates: [expected], lowerHorizon: base.state.horizon,
                           journalChecked: false, where_)
            return finished
        }
        let candidates = Array(outcome.states[outcome.lastDurable...]) + (outcome.pending.map { [$0] } ?? [])
        return try checkStore(fs, version: base.state.version, candidates: candidates, lowerHorizon: outcome.states[outcome.lastDurable].horizon,
                              journalChecked: true, where_) != 0
    }

    /// Opens the store at `version`: its records must be one candidate's, its journal (when
    /// `journalChecked`) that candidate's above the horizon, and consumers one candidate's;
    /// `verify()` clean; a new commit works. Returns the index of the candidate recovered.
    @discardableResult
    static func checkStore(_ fs: MemoryFileSystem, version: Int, candidates: [FuzzState], lowerHorizon: UInt64,
                           journalChecked: Bool, _ where_: String) throws -> Int {
        let store = try OperationFuzzer.open(path, version: version, configuration: configuration(durability: .durable), fileSystem: fs)
        let type = FuzzVersions.version(version).item
        let items = try OperationFuzzer.storedItems(store, type)
        let current = try store.currentHistoryToken().rawValue
        let match = candidates.lastIndex { $0.saved == items && (!journalChecked || $0.lastToken == current) }
        #expect(match != nil, "recovered \(items.count) records at token \(current): no committed state at or after the last durable one (\(where_))")
        guard let match else { try? store.close(); return -1 }
        let state = candidates[match]
        let horizon = try store.oldestHistoryToken().rawValue
        #expect(horizon >= lowerHorizon, "horizon \(horizon) below the durable \(lowerHorizon) (\(where_))")
        #expect(horizon <= current, "horizon \(horizon) past the current token \(current) (\(where_))")
        let fetched = try store.fetchHistory(HistoryDescriptor(after: HistoryToken(rawValue: horizon)))
        if journalChecked {
            OperationFuzzer.compareJournal(fetched, state.journal.filter { $0.token > horizon }, where_)
            let consumers = try store.historyConsumers().mapValues(\.rawValue)
            #expect(candidates.contains { $0.consumers == consumers }, "consumers \(consumers) (\(where_))")
        } else {
            // After a migration: the entries the base had, then the migration's.
            let old = fetched.filter { $0.token.rawValue <= state.lastToken }
            OperationFuzzer.compareJournal(old, state.journal.filter { $0.token > horizon }, where_)
            #expect(fetched.dropFirst(old.count).allSatisfy { $0.author == "migration" }, "migration entries (\(where_))")
        }
        let report = try store.verify()
        #expect(report.isValid, "verify: \(report) (\(where_))")
        #expect(report.records == items.count, "verify counted \(report.records) records (\(where_))")
        // The next commit works and takes a new identifier and the next token.
        try checkNextCommit(store, type, state: state, where_)
        #expect(try store.currentHistoryToken().rawValue == current + 1, "the next commit's token (\(where_))")
        try store.close()
        return match
    }

    private static func checkNextCommit<T: FuzzItem>(_ store: Store, _ type: T.Type, state: FuzzState, _ where_: String) throws {
        let context = Context(store, author: "after")
        let item = T(ModelItem(name: "after", score: 1, note: nil)).model
        let id = try context.insert(T(item)).rawValue
        try context.save()
        #expect(id > state.highestSavedID, "id \(id) reused after recovery (\(where_))")
        #expect(try Context(store).record(for: RecordID<T>(rawValue: id))?.model == item, "the next commit reads back (\(where_))")
    }

    // MARK: The campaign

    @Test func everySyncPointOfEveryOperation() throws {
        var (_, random) = FuzzConfiguration.generator(for: "crash-points")
        // Bases at versions 1, 2, 4 and 3 (so the migration runs every kind of stage), more
        // with STRATA_FUZZ_ITERATIONS.
        let versions = (0..<(4 * FuzzConfiguration.multiplier)).map { [1, 2, 4, 3][$0 % 4] }
        var crashPoints = 0
        var figures: [String: Int] = [:]
        for (index, version) in versions.enumerated() {
            let base = try Self.makeBase(seed: random.next(), version: version)
            for operation in Operation.allCases {
                // A reference run counts the operation's syncs.
                let reference = MemoryFileSystem(files: base.files)
                let clean = Self.run(operation, from: base, on: reference)
                let syncs = reference.counters.syncs
                #expect(clean.lastDurable == clean.states.count - 1, "\(operation) from base \(index) did not finish")
                if operation == .compaction && clean.segmentsAfter < clean.segmentsBefore { figures["compactions_deleting_segments", default: 0] += 1 }
                figures["syncs_\(operation.rawValue)", default: 0] += syncs
                for point in stride(from: 0, to: syncs, by: Self.sampling) {
                    for (modeIndex, mode) in MemoryFileSystem.CrashMode.allCases.enumerated() {
                        let where_ = "\(operation), base \(index) (version \(version), seed \(base.seed)), sync point \(point) of \(syncs), mode \(mode), run seed \(FuzzConfiguration.seed)"
                        let fs = MemoryFileSystem(files: base.files)
                        fs.setFaultInjector { ($0.kind == .sync || $0.kind == .syncDirectory) && $0.syncIndex == point ? .crash : nil }
                        let outcome = Self.run(operation, from: base, on: fs)
                        fs.setFaultInjector(nil)
                        var crashRandom = SeededRandom(seed: base.seed ^ UInt64(point) << 8 ^ UInt64(modeIndex))
                        fs.simulateCrash(mode: mode, using: &crashRandom)
                        do {
                            if try Self.checkRecovered(fs, operation, base: base, outcome: outcome, where_) {
                                figures["\(operation.rawValue)_after", default: 0] += 1
                            }
                        } catch {
                            Issue.record("\(error) (\(where_))")
                        }
                        crashPoints += 1
                    }
                }
            }
        }
        FuzzConfiguration.report("crash-points", [
            "crash_points": crashPoints, "bases": versions.count,
            "syncs_commit": figures["syncs_commit"] ?? 0, "syncs_checkpoint": figures["syncs_checkpoint"] ?? 0,
            "syncs_compaction": figures["syncs_compaction"] ?? 0, "syncs_migration": figures["syncs_migration"] ?? 0,
            "syncs_retention": figures["syncs_retention"] ?? 0,
            "migrations_found_finished": figures["migration_after"] ?? 0,
            "compactions_deleting_segments": figures["compactions_deleting_segments"] ?? 0,
        ])
        #expect((figures["compactions_deleting_segments"] ?? 0) > 0, "no compaction had work to do")
    }
}
