import Foundation
import Strata

/// update-with-history and delete-with-history (issue 20): what the history journal costs
/// when records change rather than arrive. A store of 100,000 `JournaledItem`s (built untimed
/// in this process, the journal set as the timed side's) gets every item updated — its title
/// and its counter: two attributes, old and new values journaled — or deleted (a tombstone
/// with the title), with the journal on (the default) against the same with
/// `Store.Configuration.history.isEnabled = false` (baseline `strata-no-history`).
///
/// Each side is timed from opening the store to closing it (durable commits, the default), in
/// two shapes: ONE `store.write` changing every item (the row's figure), and writes of 1,000
/// items (`batched_*` fields). Pairs of runs alternating which side goes first, each on a
/// store built anew, medians compared. Target: ratio ≤ 1.15 (issue 20).
///
/// Afterwards the last store of each side and shape is checked in a process of its own: the
/// items' values (every 97th and the last), and the journal — the changes of every item in
/// order, the sampled ones' values, none with the journal off.
///
/// Parts `profile-journal-{on,off}-{one,batched}` run one side of one shape alone (store built,
/// then changed), for a profiler: `--run-part update-with-history:profile-journal-on-one --workdir DIR`;
/// `timeChanges` is the function to collect in. Parts `small-commits-journal-{on,off}` time
/// 20,000 relaxed commits of one change each instead (`timeSmallCommits`), the shape of an
/// app's saves; the workload itself does not run them.
enum ChangeWithHistoryWorkloads {
    /// What the workload does to every item.
    enum Change: String, Sendable {
        case update
        case delete
    }

    static let update = make(.update, summary: "100k updates of two attributes (old and new values journaled), one write and "
        + "writes of 1,000, journal on vs. off (strata-no-history), target ≤ 1.15")
    static let delete = make(.delete, summary: "100k deletes (tombstones journaled), one write and writes of 1,000, journal on vs. "
        + "off (strata-no-history), target ≤ 1.15")

    static let targetRatio = 1.15
    static let itemCount = 100_000
    static let batchSize = 1_000

    /// How many pairs of runs per shape (journal off, journal on; the order alternates).
    static func pairs(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 5, full: 9)
    }

    /// The two shapes: every item in one write, or in writes of `batchSize`.
    static let shapes: [(name: String, itemsPerWrite: Int)] = [("one", itemCount), ("batched", batchSize)]

    static func make(_ change: Change, summary: String) -> Workload {
        var parts: [String: Workload.Part] = [:]
        for shape in shapes {
            for history in [true, false] {
                parts["verify-\(storeName(shape.name, history: history))"] = { context in
                    try verify(context, change: change, store: storeName(shape.name, history: history), history: history,
                               writes: itemCount / shape.itemsPerWrite)
                }
                // One side of one shape alone, for a profiler (perf, callgrind): the store built,
                // then changed as a timed run changes it. Not run by the workload itself.
                parts["profile-\(storeName(shape.name, history: history))"] = { context in
                    let path = context.path(storeName(shape.name, history: history))
                    try? FileManager.default.removeItem(atPath: path)
                    try JournaledItemStore.create(at: path, count: itemCount, history: history)
                    let seconds = try timeChanges(change, at: path, history: history, itemsPerWrite: shape.itemsPerWrite)
                    return .object([("seconds", .double(seconds))])
                }
            }
        }
        for history in [true, false] {
            // Small commits, for a profiler or an A/B: not run by the workload itself.
            parts["small-commits-journal-\(history ? "on" : "off")"] = { context in
                .object([("seconds", .double(try timeSmallCommits(change, context: context, history: history)))])
            }
        }
        return Workload(name: "\(change.rawValue)-with-history", summary: summary,
                        run: { context in try run(context, change: change) }, parts: parts)
    }

    static func storeName(_ shape: String, history: Bool) -> String {
        "journal-\(history ? "on" : "off")-\(shape)"
    }

    /// One shape's runs: open→close seconds of each side, in pair order.
    struct ShapeRuns {
        var with: [Double] = []
        var without: [Double] = []
        var ratios: [Double] { zip(with, without).map { $0 / $1 } }
        var ratio: Double { Measurements.median(with) / Measurements.median(without) }
    }

    static func run(_ context: WorkloadContext, change: Change) throws -> WorkloadResult {
        let pairs = pairs(context.scale)
        var runs: [String: ShapeRuns] = [:]
        for shape in shapes {
            var shapeRuns = ShapeRuns()
            for pair in 0..<pairs {
                for history in pair % 2 == 0 ? [false, true] : [true, false] {
                    context.progress("\(shape.name == "one" ? "one write" : "writes of \(shape.itemsPerWrite)"), pair \(pair + 1) "
                        + "of \(pairs): \(change.rawValue) \(itemCount) items, journal \(history ? "on" : "off")")
                    let path = context.path(storeName(shape.name, history: history))
                    try? FileManager.default.removeItem(atPath: path)
                    try JournaledItemStore.create(at: path, count: itemCount, history: history)
                    sync()
                    let seconds = try timeChanges(change, at: path, history: history, itemsPerWrite: shape.itemsPerWrite)
                    if history { shapeRuns.with.append(seconds) } else { shapeRuns.without.append(seconds) }
                }
            }
            runs[shape.name] = shapeRuns
        }
        let bytes = { (shape: String, history: Bool) in FolderSize.bytes(at: context.path(storeName(shape, history: history))) }
        let journalBytes = Int64(clamping: bytes("one", true)) - Int64(clamping: bytes("one", false))

        context.progress("checking the stores and their journals (each in a process of its own)")
        var journaled: [String: PartReport] = [:]
        for shape in shapes {
            for history in [true, false] {
                let report = try context.runPartProcess("verify-\(storeName(shape.name, history: history))")
                if history { journaled[shape.name] = report }
            }
        }

        let one = runs["one", default: ShapeRuns()], batched = runs["batched", default: ShapeRuns()]
        let verb = change == .update ? "updates" : "deletes"
        return WorkloadResult(
            workload: "\(change.rawValue)-with-history",
            records: itemCount,
            strataSeconds: Measurements.median(one.with),
            baseline: WorkloadResult.Baseline(name: "strata-no-history", seconds: Measurements.median(one.without)),
            notes: "\(itemCount) \(verb) in one write: medians of \(pairs) alternating pairs, ratios \(Measurements.range(one.ratios)); "
                + "writes of \(batchSize): \(String(format: "%.2f", batched.ratio)) (\(seconds(Measurements.median(batched.with))) vs "
                + "\(seconds(Measurements.median(batched.without))), ratios \(Measurements.range(batched.ratios))); "
                + "target ≤ \(targetRatio); journal ≈ \(journalBytes / Int64(itemCount)) bytes per change on disk",
            extra: [
                ("target_ratio", .double(targetRatio)),
                ("items_per_write", .int(Int64(itemCount))),
                ("pair_ratios", .array(one.ratios.map { .double($0) })),
                ("strata_seconds_runs", .array(one.with.map { .double($0) })),
                ("baseline_seconds_runs", .array(one.without.map { .double($0) })),
                ("batched_items_per_write", .int(Int64(batchSize))),
                ("batched_strata_seconds", .double(Measurements.median(batched.with))),
                ("batched_baseline_seconds", .double(Measurements.median(batched.without))),
                ("batched_ratio", .double(batched.ratio)),
                ("batched_pair_ratios", .array(batched.ratios.map { .double($0) })),
                ("strata_store_bytes", .int(Int64(clamping: bytes("one", true)))),
                ("baseline_store_bytes", .int(Int64(clamping: bytes("one", false)))),
                ("journal_bytes_per_change", .double(Double(journalBytes) / Double(itemCount))),
                ("history_changes", .int(Int64(try journaled["one"]?.int("history_changes") ?? 0))),
                ("batched_history_transactions", .int(Int64(try journaled["batched"]?.int("history_transactions") ?? 0))),
                ("verified_items", .int(Int64(sampleNumbers.count))),
            ]
        )
    }

    /// Opens the store at `path`, changes every item in writes of `itemsPerWrite`, closes it;
    /// returns the seconds from before the open to after the close.
    static func timeChanges(_ change: Change, at path: String, history: Bool, itemsPerWrite: Int) throws -> Double {
        let stopwatch = Stopwatch()
        let store = try JournaledItemStore.open(at: path, history: history)
        var next: UInt64 = 1
        while next <= UInt64(itemCount) {
            let last = min(next + UInt64(itemsPerWrite) - 1, UInt64(itemCount))
            try store.write { transaction in
                for number in next...last { try apply(change, toItem: number, in: transaction) }
            }
            next = last + 1
        }
        try store.close()
        return stopwatch.elapsedSeconds
    }

    /// Updates item `number` to `JournaledItem.updated(number)`, or deletes it (it must exist).
    static func apply(_ change: Change, toItem number: UInt64, in transaction: Store.WriteTransaction) throws {
        let id = RecordID<JournaledItem>(rawValue: number)
        switch change {
        case .update:
            try transaction.update(id, to: JournaledItem.updated(number))
        case .delete:
            guard try transaction.delete(id) else { throw BenchmarkError.verificationFailed("item \(number) was not there to delete") }
        }
    }

    /// How many commits `timeSmallCommits` makes.
    static let smallCommits = 20_000

    /// Part "small-commits-journal-…": builds the store of `itemCount` items, then changes
    /// every fifth item of the first `5 × smallCommits` — updates it or deletes it — in a
    /// `store.write` of its own, relaxed (committed, not synced: an app's saves one after
    /// another, without a sync's wait in each); returns the seconds from before the open to
    /// after the close.
    static func timeSmallCommits(_ change: Change, context: WorkloadContext, history: Bool) throws -> Double {
        let path = context.path("small-commits-journal-\(history ? "on" : "off")")
        try? FileManager.default.removeItem(atPath: path)
        try JournaledItemStore.create(at: path, count: itemCount, history: history)
        let stopwatch = Stopwatch()
        let store = try JournaledItemStore.open(at: path, history: history, durability: .relaxed)
        for commit in 1...UInt64(smallCommits) {
            try store.write { transaction in try apply(change, toItem: commit * 5, in: transaction) }
        }
        try store.close()
        return stopwatch.elapsedSeconds
    }

    /// The items whose values are checked: every 97th and the last.
    static var sampleNumbers: [UInt64] {
        Array(stride(from: UInt64(1), through: UInt64(itemCount), by: 97)) + [UInt64(itemCount)]
    }

    /// Part "verify-journal-…": the items after the change, and the journal — the build's one
    /// insert transaction, then `writes` transactions changing items 1…N in order (the sampled
    /// ones with their old and new values, or their tombstone) — or nothing with the journal off.
    @Sendable static func verify(_ context: WorkloadContext, change: Change, store name: String, history: Bool,
                                 writes: Int) throws -> JSONValue {
        func fail(_ what: String) -> BenchmarkError { .verificationFailed("\(name): \(what)") }
        let store = try JournaledItemStore.open(at: context.path(name), history: history)
        let reader = Context(store)
        let stored = try reader.fetchCount(FetchDescriptor<JournaledItem>())
        guard stored == (change == .update ? itemCount : 0) else { throw fail("\(stored) items after the \(change.rawValue)s") }
        if change == .update {
            for number in sampleNumbers {
                let item = try reader.record(for: RecordID<JournaledItem>(rawValue: number))
                guard item == JournaledItem.updated(number) else { throw fail("item \(number) is \(String(describing: item))") }
            }
        }
        let journal = try store.fetchHistory()
        var changes = 0
        if history {
            guard journal.count == 1 + writes else { throw fail("the journal holds \(journal.count) transactions, not \(1 + writes)") }
            let samples = Set(sampleNumbers)
            var expected: UInt64 = 1
            for transaction in journal.dropFirst() {
                for journaledChange in transaction.changes {
                    guard journaledChange.recordNumber == expected, journaledChange.entityName == JournaledItem.entityName else {
                        throw fail("journaled change \(journaledChange.recordNumber) of \(journaledChange.entityName) where item \(expected) was expected")
                    }
                    if samples.contains(expected) { try check(journaledChange, change: change, number: expected, fail: fail) }
                    expected += 1
                    changes += 1
                }
            }
            guard changes == itemCount else { throw fail("the journal holds \(changes) \(change.rawValue)s, not \(itemCount)") }
        } else if !journal.isEmpty {
            throw fail("the store written with the journal off has \(journal.count) journaled transactions")
        }
        try store.close()
        return .object([("history_transactions", .int(Int64(journal.count))), ("history_changes", .int(Int64(changes)))])
    }

    /// Throws unless `journaled` is item `number`'s update (title and counter, old and new) or
    /// delete (its title in the tombstone).
    private static func check(_ journaled: HistoryChange, change: Change, number: UInt64,
                              fail: (String) -> BenchmarkError) throws {
        let old = JournaledItem.original(number)
        switch change {
        case .update:
            let new = JournaledItem.updated(number)
            let expected = [AttributeChange(name: "count", oldValue: .int(Int64(old.count)), newValue: .int(Int64(new.count))),
                            AttributeChange(name: "title", oldValue: .string(old.title), newValue: .string(new.title))]
            guard journaled.kind == .update, journaled.updatedAttributes.sorted(by: { $0.name < $1.name }) == expected else {
                throw fail("item \(number)'s journaled change is \(journaled.kind) \(journaled.updatedAttributes)")
            }
        case .delete:
            guard journaled.kind == .delete, journaled.tombstone == ["title": .string(old.title)] else {
                throw fail("item \(number)'s journaled change is \(journaled.kind), tombstone \(journaled.tombstone)")
            }
        }
    }

    private static func seconds(_ seconds: Double) -> String { String(format: "%.3f s", seconds) }
}
