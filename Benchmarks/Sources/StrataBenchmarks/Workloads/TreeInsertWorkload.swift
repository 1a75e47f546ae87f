@_spi(Engine) import Strata
import Foundation

/// tree-insert: the brief's 1,000,000 persons inserted in ONE transaction into a new store —
/// Strata's `RawRecordStore` (ids from `allocateID`, each person in `PersonEncoding`'s form,
/// a `.durable` write) against SQLite (one prepared INSERT binding id and three columns,
/// BEGIN … COMMIT). Each side's time runs from opening the new store (SQLite: and creating
/// the table) to closing it, and includes generating each person from its id and encoding
/// or binding it; `generation_seconds` says how much of that is generating.
///
/// SQLite runs first, in a process of its own, so the peak memory reported is Strata's.
/// Afterwards each store is reopened and checked (count, sample field by field).
enum TreeInsertWorkload {
    static let workload = Workload(
        name: "tree-insert",
        summary: "1M persons in one durable transaction: RawRecordStore vs. SQLite (BEGIN … COMMIT)",
        run: run,
        parts: ["sqlite": { context in try runSQLite(context, count: TreeWorkloads.recordCount(context.scale)) }]
    )

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let count = TreeWorkloads.recordCount(context.scale)
        let generation = TreeWorkloads.generateAll(count: count)

        context.progress("SQLite: inserting \(count) persons in one transaction (in a process of its own)")
        let sqlite = try context.runPartProcess("sqlite")
        let sqlitePhases = try InsertPhases(report: sqlite, prefix: "sqlite")
        let sqliteBytes = try sqlite.uint64("store_bytes")

        context.progress("Strata: inserting \(count) persons in one durable transaction")
        let path = TreeWorkloads.strataPath(context)
        sync()
        let strataPhases = try timeStrataInsert(at: path, count: count)
        let strataBytes = FolderSize.bytes(at: path)

        context.progress("checking both stores")
        let store = try RawRecordStore.open(at: path)
        let sampleChecksum = try store.snapshot().verifyPersons(count: count)
        try store.close()
        try TreeWorkloads.compareSamples(strata: sampleChecksum, sqlite: try sqlite.uint64("sample_checksum"))

        let sqlitePeak = try sqlite.peakMemoryBytes
        return WorkloadResult(
            workload: workload.name,
            records: count,
            strataSeconds: strataPhases.total,
            baseline: .sqlite(seconds: sqlitePhases.total),
            notes: "1 txn, open→close; on disk Strata \(TreeWorkloads.size(strataBytes)), SQLite \(TreeWorkloads.size(sqliteBytes))"
                + " (own process, peak \(TreeWorkloads.memory(sqlitePeak)))",
            extra: [
                ("strata_store_bytes", .int(Int64(clamping: strataBytes))),
                ("sqlite_store_bytes", .int(Int64(clamping: sqliteBytes))),
                ("sqlite_peak_memory_bytes", .int(Int64(clamping: sqlitePeak))),
                ("generation_seconds", .double(generation.seconds)),
            ] + strataPhases.json(prefix: "strata") + sqlitePhases.json(prefix: "sqlite") + [
                ("verified_records", .int(Int64(PersonVerification.sampleIDs(recordCount: count).count))),
            ]
        )
    }

    /// Creates a store at `path`, inserts persons 1...count in one durable transaction and
    /// closes it, timing each phase.
    private static func timeStrataInsert(at path: String, count: Int) throws -> InsertPhases {
        var phases = InsertPhases()
        let stopwatch = Stopwatch()
        let store = try RawRecordStore.open(at: path)
        phases.open = stopwatch.elapsedSeconds
        var loopEnd = 0.0
        try store.write(durability: .durable) { transaction in
            let loopStart = stopwatch.elapsedSeconds
            try transaction.insertPersons(count: count)
            loopEnd = stopwatch.elapsedSeconds
            phases.insert = loopEnd - loopStart
        }
        let committed = stopwatch.elapsedSeconds
        phases.commit = committed - loopEnd
        try store.close()
        phases.close = stopwatch.elapsedSeconds - committed
        return phases
    }

    /// Part "sqlite", in a process of its own: the timed insert of persons 1...count, then
    /// the check. (The record-API `insert` workload runs it too.)
    static func runSQLite(_ context: WorkloadContext, count: Int) throws -> JSONValue {
        let path = try TreeWorkloads.sqlitePath(context)
        sync()
        var phases = InsertPhases()
        let stopwatch = Stopwatch()
        let database = try SQLiteDatabase(path: path)
        let table = PersonTable(database: database)
        try table.create()
        phases.open = stopwatch.elapsedSeconds
        try database.execute("BEGIN")
        try table.insertPersons(count: count)
        let loopEnd = stopwatch.elapsedSeconds
        phases.insert = loopEnd - phases.open
        try database.execute("COMMIT")
        let committed = stopwatch.elapsedSeconds
        phases.commit = committed - loopEnd
        try database.close()
        phases.close = stopwatch.elapsedSeconds - committed
        let storeBytes = FolderSize.bytes(at: TreeWorkloads.sqliteFolder(context))

        let reopened = try SQLiteDatabase(path: path)
        let sampleChecksum = try PersonTable(database: reopened).verifyPersons(count: count)
        try reopened.close()
        return .object([
            ("store_bytes", .int(Int64(clamping: storeBytes))),
            ("sample_checksum", .int(Int64(bitPattern: sampleChecksum.value))),
        ] + phases.json(prefix: "sqlite"))
    }
}
