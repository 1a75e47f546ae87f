import Foundation
import Strata

/// insert: the brief's 1,000,000 persons inserted through Strata's public API in one
/// transaction — a new `Store(at:for:)`, ONE `store.write { … }` (durable, the default) with
/// one `insert` per `PersonRecord` — against SQLite inserting the same records in one
/// transaction (the tree-insert baseline: one prepared INSERT binding id and three columns).
/// Each side is timed from opening the new store to closing it, generating each person
/// included (Strata: and making it a `PersonRecord`, i.e. two Strings and a Date).
///
/// `Store.write` is the public API for one large transaction: records go into the store as
/// they are inserted (spilled to the log as buffers fill), so memory stays bounded. (A
/// `Context` keeps its unsaved changes in memory until `save()`, as SwiftData's does; it is
/// the unit of work for an app's edits, not for a million-record import.) Three pairs of runs
/// in both scales, the side going first alternating, each on a new store (SQLite's in a
/// process of its own), and the medians compared: one run of each side is at the mercy of a
/// noisy machine (single runs gave 0.40–0.50 within an hour). Afterwards the last stores are
/// checked fully (count, sample field by field), Strata's in a process of its own since
/// counting fetches every record.
enum InsertWorkload {
    /// `insert`: `PersonRecord`, which codes itself by hand (the fast path).
    static let workload = make(name: "insert", type: PersonRecord.self,
                               summary: "1M PersonRecords (hand-coded) in one durable store.write transaction: public API vs. SQLite (BEGIN … COMMIT)")
    /// `insert-codable`: the same through `Codable` (`CodablePersonRecord`).
    static let codable = make(name: "insert-codable", type: CodablePersonRecord.self,
                              summary: "insert with CodablePersonRecord (synthesized Codable, no hand-coded path) vs. SQLite")

    static func make<Record: BenchmarkPerson>(name: String, type: Record.Type, summary: String) -> Workload {
        Workload(
            name: name,
            summary: summary,
            run: { context in try run(context, name: name, type: type) },
            parts: [
                "sqlite": { context in try TreeInsertWorkload.runSQLite(context, count: RecordAPIWorkloads.recordCount(context.scale)) },
                "verify-strata": RecordAPIWorkloads.verifyStrataPart,
            ]
        )
    }

    /// Alternating pairs of runs; the medians are compared.
    static let pairs = 3

    static func run<Record: BenchmarkPerson>(_ context: WorkloadContext, name: String, type: Record.Type) throws -> WorkloadResult {
        let count = RecordAPIWorkloads.recordCount(context.scale)
        let generationSeconds = generateAll(count: count, as: type)

        let path = TreeWorkloads.strataPath(context)
        var sqliteRuns: [InsertPhases] = [], strataRuns: [InsertPhases] = []
        var sqlite: PartReport?
        func runSQLite() throws {
            try? FileManager.default.removeItem(atPath: TreeWorkloads.sqliteFolder(context))
            context.progress("SQLite: inserting \(count) persons in one transaction (in a process of its own)")
            let report = try context.runPartProcess("sqlite")
            sqliteRuns.append(try InsertPhases(report: report, prefix: "sqlite"))
            sqlite = report
        }
        func runStrata() throws {
            try? FileManager.default.removeItem(atPath: path)
            context.progress("Strata: inserting \(count) PersonRecords in one durable store.write transaction")
            sync()
            strataRuns.append(try timeStrataInsert(at: path, count: count, as: type))
        }
        try Measurements.alternating(pairs: pairs, runSQLite, runStrata)
        guard let sqlite else { throw BenchmarkError.verificationFailed("SQLite did not run") }
        let sqlitePhases = Measurements.medianPhases(sqliteRuns), strataPhases = Measurements.medianPhases(strataRuns)
        let ratios = zip(strataRuns, sqliteRuns).map { $0.total / $1.total }
        let sqliteBytes = try sqlite.uint64("store_bytes")
        let strataBytes = FolderSize.bytes(at: path)

        context.progress("checking both stores (Strata's in a process of its own)")
        let verification = try context.runPartProcess("verify-strata")
        try TreeWorkloads.compareSamples(strata: PersonChecksum(value: try verification.uint64("sample_checksum")),
                                         sqlite: try sqlite.uint64("sample_checksum"))

        let sqlitePeak = try sqlite.peakMemoryBytes
        return WorkloadResult(
            workload: name,
            records: count,
            strataSeconds: Measurements.median(strataRuns.map(\.total)),
            baseline: .sqlite(seconds: Measurements.median(sqliteRuns.map(\.total))),
            notes: "1 store.write, open→close (commit \(String(format: "%.2f", strataPhases.commit)) s); medians of \(pairs) "
                + "alternating pairs, ratios \(Measurements.range(ratios)); on disk Strata"
                + " \(TreeWorkloads.size(strataBytes)), SQLite \(TreeWorkloads.size(sqliteBytes))"
                + " (own process, peak \(TreeWorkloads.memory(sqlitePeak)))",
            extra: [
                ("strata_store_bytes", .int(Int64(clamping: strataBytes))),
                ("sqlite_store_bytes", .int(Int64(clamping: sqliteBytes))),
                ("sqlite_peak_memory_bytes", .int(Int64(clamping: sqlitePeak))),
                ("generation_seconds", .double(generationSeconds)),
                ("pair_ratios", .array(ratios.map { .double($0) })),
            ] + strataPhases.json(prefix: "strata") + sqlitePhases.json(prefix: "sqlite") + [
                ("verified_records", .int(Int64(PersonVerification.sampleIDs(recordCount: count).count))),
            ]
        )
    }

    /// Creates a store at `path`, inserts persons 1...count in one `store.write` (durable) and
    /// closes it, timing each phase: open, the insert loop, the commit, close. `history`: the
    /// journal on (the default) or off.
    static func timeStrataInsert<Record: BenchmarkPerson>(at path: String, count: Int, as type: Record.Type,
                                                          history: Bool = true) throws -> InsertPhases {
        var phases = InsertPhases()
        let stopwatch = Stopwatch()
        let store = try PersonRecordStore.open(at: path, durability: .durable, history: history)
        phases.open = stopwatch.elapsedSeconds
        var loopEnd = 0.0
        try store.write { transaction in
            try transaction.insertPersons(count: count, as: type)
            loopEnd = stopwatch.elapsedSeconds
        }
        phases.insert = loopEnd - phases.open
        let saved = stopwatch.elapsedSeconds
        phases.commit = saved - loopEnd
        try store.close()
        phases.close = stopwatch.elapsedSeconds - saved
        return phases
    }

    /// Seconds to generate persons 1...count and make each a `PersonRecord` (no store): the
    /// part of Strata's insert loop that is not Strata. (SQLite's loop only generates.)
    private static func generateAll<Record: BenchmarkPerson>(count: Int, as type: Record.Type) -> Double {
        let (bytes, seconds) = Stopwatch.time {
            var person = Person()
            var bytes = 0
            for id in 1...UInt64(count) {
                person.generate(id: id)
                let record = Record(person)
                bytes &+= record.fullName.utf8.count &+ record.note.utf8.count
            }
            return bytes
        }
        precondition(bytes > 0, "no text generated")  // uses the records, so they are made
        return seconds
    }
}
