import Foundation
import Strata

/// insert-with-history: the `insert` workload (the brief's 1,000,000 persons as hand-coded
/// `PersonRecord`s in ONE durable `store.write`, open→close) with the history journal on —
/// the default — against the same with `Store.Configuration.history.isEnabled = false`
/// (baseline `strata-no-history`), both in this process, in alternating order, several times
/// (the medians count). Target: ratio ≤ 1.15 (issue 5).
///
/// Each side writes a new store at the same path each time. Afterwards the last two stores
/// are checked fully in processes of their own — record count, no record N+1, the 1,002-record
/// sample field by field against the generated persons — and their samples' checksums must be
/// equal; the journaled store must hold exactly one transaction whose changes are the inserts
/// of persons 1…N in order, and the other store none.
enum InsertWithHistoryWorkload {
    static let workload = Workload(
        name: "insert-with-history",
        summary: "insert (1M PersonRecords, one durable store.write) with the history journal on vs. off (strata-no-history), target ≤ 1.15",
        run: run,
        parts: [
            "verify-history": { context in try verify(context, history: true) },
            "verify-no-history": { context in try verify(context, history: false) },
        ]
    )

    static let targetRatio = 1.15

    /// How many pairs of runs (journal off, journal on; the order alternates).
    static func pairs(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 5, full: 9)
    }

    static func path(_ context: WorkloadContext, history: Bool) -> String {
        context.path(history ? "strata-history" : "strata-no-history")
    }

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let count = RecordAPIWorkloads.recordCount(context.scale)
        let pairs = pairs(context.scale)
        var with: [InsertPhases] = [], without: [InsertPhases] = []
        for pair in 0..<pairs {
            for history in pair % 2 == 0 ? [false, true] : [true, false] {
                context.progress("pair \(pair + 1) of \(pairs): \(count) PersonRecords, journal \(history ? "on" : "off")")
                let path = path(context, history: history)
                try? FileManager.default.removeItem(atPath: path)
                sync()
                let phases = try InsertWorkload.timeStrataInsert(at: path, count: count, as: PersonRecord.self, history: history)
                if history { with.append(phases) } else { without.append(phases) }
            }
        }
        let historyBytes = FolderSize.bytes(at: path(context, history: true))
        let plainBytes = FolderSize.bytes(at: path(context, history: false))

        context.progress("checking both stores and the journal (each in a process of its own)")
        let verifyWith = try context.runPartProcess("verify-history")
        let verifyWithout = try context.runPartProcess("verify-no-history")
        let checksum = try verifyWith.uint64("sample_checksum")
        guard checksum == (try verifyWithout.uint64("sample_checksum")) else {
            throw BenchmarkError.verificationFailed("the two stores' samples differ")
        }

        let ratios = zip(with, without).map { $0.total / $1.total }
        let strata = Measurements.median(with.map(\.total)), baseline = Measurements.median(without.map(\.total))
        return WorkloadResult(
            workload: workload.name,
            records: count,
            strataSeconds: strata,
            baseline: WorkloadResult.Baseline(name: "strata-no-history", seconds: baseline),
            notes: "medians of \(pairs) alternating pairs, ratios \(Measurements.range(ratios)); target ≤ \(targetRatio);"
                + " commit \(String(format: "%.2f", Measurements.median(with.map(\.commit)))) vs"
                + " \(String(format: "%.2f", Measurements.median(without.map(\.commit)))) s;"
                + " on disk \(TreeWorkloads.size(historyBytes)) vs \(TreeWorkloads.size(plainBytes))",
            extra: [
                ("target_ratio", .double(targetRatio)),
                ("pair_ratios", .array(ratios.map { .double($0) })),
                ("strata_seconds_runs", .array(with.map { .double($0.total) })),
                ("baseline_seconds_runs", .array(without.map { .double($0.total) })),
                ("strata_store_bytes", .int(Int64(clamping: historyBytes))),
                ("baseline_store_bytes", .int(Int64(clamping: plainBytes))),
                ("history_transactions", .int(Int64(try verifyWith.int("history_transactions")))),
                ("history_changes", .int(Int64(try verifyWith.int("history_changes")))),
                ("verified_records", .int(Int64(PersonVerification.sampleIDs(recordCount: count).count))),
            ] + Measurements.medianPhases(with).json(prefix: "strata") + Measurements.medianPhases(without).json(prefix: "baseline")
        )
    }

    /// Part "verify-history" / "verify-no-history": the store's records (count, sample) and its
    /// journal — one transaction inserting persons 1…N in order, or none with the journal off.
    @Sendable static func verify(_ context: WorkloadContext, history: Bool) throws -> JSONValue {
        let count = RecordAPIWorkloads.recordCount(context.scale)
        let store = try PersonRecordStore.open(at: path(context, history: history), history: history)
        let checksum = try Context(store).verifyPersons(count: count, countAll: true)
        let journal = try store.fetchHistory()
        if history {
            guard journal.count == 1, let changes = journal.first?.changes else {
                throw BenchmarkError.verificationFailed("the journal holds \(journal.count) transactions, not 1")
            }
            guard changes.count == count else {
                throw BenchmarkError.verificationFailed("the journaled transaction has \(changes.count) changes, not \(count)")
            }
            for (index, change) in changes.enumerated() {
                guard change.kind == .insert, change.entityName == PersonRecord.entityName, change.recordNumber == UInt64(index + 1) else {
                    throw BenchmarkError.verificationFailed("journaled change \(index) is \(change.kind) of \(change.entityName) \(change.recordNumber)")
                }
            }
        } else if !journal.isEmpty {
            throw BenchmarkError.verificationFailed("the store written with the journal off has \(journal.count) journaled transactions")
        }
        try store.close()
        return .object([
            ("sample_checksum", .int(Int64(bitPattern: checksum.value))),
            ("history_transactions", .int(Int64(journal.count))),
            ("history_changes", .int(Int64(journal.first?.changes.count ?? 0))),
        ])
    }
}

extension Measurements {
    /// Each phase's median over `runs`.
    static func medianPhases(_ runs: [InsertPhases]) -> InsertPhases {
        var phases = InsertPhases()
        phases.open = median(runs.map(\.open))
        phases.insert = median(runs.map(\.insert))
        phases.commit = median(runs.map(\.commit))
        phases.close = median(runs.map(\.close))
        return phases
    }
}
