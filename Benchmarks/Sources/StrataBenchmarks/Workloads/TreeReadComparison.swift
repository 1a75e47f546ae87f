@_spi(Engine) import Strata
import Foundation

/// How the read workloads (tree-read-by-id, tree-scan) compare Strata and SQLite on the
/// same persons. Each workload says what one timed pass does on each side and what its
/// answer (a checksum, a count) must be; this runs it:
///
/// 1. part "sqlite", in a process of its own: builds the database (not timed: one
///    transaction, closed), opens it (not timed), checks it, runs the timed pass several
///    times, and reports the times, the answer, the sample's checksum and the size on disk;
/// 2. part "build-strata", in a process of its own: builds the Strata store the same way —
///    building takes far more memory than reading, and would otherwise be the peak reported;
/// 3. here: opens the Strata store (not timed), checks it, runs the timed pass as many times.
///
/// Both stores' files are in the page cache (just written); each store's own cache starts
/// empty (Strata's default node cache, SQLite's default page cache). The median pass counts.
struct TreeReadComparison {
    var strataSeconds: [Double]
    var sqliteSeconds: [Double]
    var strataStoreBytes: UInt64
    var sqliteStoreBytes: UInt64
    var sqlitePeakMemoryBytes: UInt64
    var recordCount: Int

    /// One timed pass over a store, returning its answer.
    typealias SQLitePass = (PersonTable) throws -> UInt64

    /// The parts a read workload runs in processes of their own. `makeSQLitePass` prepares
    /// the SQLite pass for a scale (e.g. draws the ids to look up) before anything is timed.
    static func parts(makeSQLitePass: @escaping @Sendable (WorkloadScale) -> SQLitePass) -> [String: Workload.Part] {
        [
            "sqlite": { context in try runSQLitePart(context, pass: makeSQLitePass(context.scale)) },
            "build-strata": buildStrataPart,
        ]
    }

    /// Runs both sides (see the type's description). `expected` is the answer every pass must
    /// give; `describe` names an answer in error messages ("a checksum of 42").
    static func run(
        _ context: WorkloadContext, expected: UInt64, describe: (UInt64) -> String,
        strataPass: (RawRecordStore.Snapshot) throws -> UInt64
    ) throws -> TreeReadComparison {
        let count = TreeWorkloads.recordCount(context.scale)
        let repetitions = TreeWorkloads.repetitions(context.scale)

        context.progress("SQLite: building \(count) persons (not timed), then \(repetitions) timed passes (in a process of its own)")
        let sqlite = try context.runPartProcess("sqlite")
        let sqliteAnswer = try sqlite.uint64("answer")
        guard sqliteAnswer == expected else {
            throw BenchmarkError.verificationFailed("SQLite's passes gave \(describe(sqliteAnswer)), the persons written \(describe(expected))")
        }

        context.progress("Strata: building \(count) persons (not timed, in a process of its own)")
        let strataBuild = try context.runPartProcess("build-strata")
        let store = try RawRecordStore.open(at: TreeWorkloads.strataPath(context))
        let sampleChecksum = try store.snapshot().verifyPersons(count: count)
        try TreeWorkloads.compareSamples(strata: sampleChecksum, sqlite: try sqlite.uint64("sample_checksum"))

        context.progress("Strata: \(repetitions) timed passes")
        let strataSeconds = try timeStrataPasses(repetitions, { try strataPass(store.snapshot()) }) { answer in
            guard answer == expected else {
                throw BenchmarkError.verificationFailed("Strata's pass gave \(describe(answer)), the persons written \(describe(expected))")
            }
        }
        try store.close()
        return try TreeReadComparison(strataSeconds: strataSeconds, sqlite: sqlite, strataBuild: strataBuild, recordCount: count)
    }

    /// The comparison of Strata's timed passes with what the "sqlite" and "build-strata" parts
    /// reported.
    init(strataSeconds: [Double], sqlite: PartReport, strataBuild: PartReport, recordCount: Int) throws {
        self.strataSeconds = strataSeconds
        sqliteSeconds = try sqlite.doubles("seconds")
        strataStoreBytes = try strataBuild.uint64("store_bytes")
        sqliteStoreBytes = try sqlite.uint64("store_bytes")
        sqlitePeakMemoryBytes = try sqlite.peakMemoryBytes
        self.recordCount = recordCount
    }

    /// Syncs, then times `repetitions` runs of `pass`, each answer checked by `check` (which
    /// throws for a wrong one); the seconds of each run.
    static func timeStrataPasses<Answer>(_ repetitions: Int, _ pass: () throws -> Answer,
                                         check: (Answer) throws -> Void) throws -> [Double] {
        sync()
        var seconds: [Double] = []
        for _ in 0..<repetitions {
            let (answer, elapsed) = try Stopwatch.time(pass)
            try check(answer)
            seconds.append(elapsed)
        }
        return seconds
    }

    /// The workload's result: the median passes, `notes` followed by the sizes on disk, and
    /// the common extra fields after the workload's own.
    func result(workload: String, notes: String, extra: [(key: String, value: JSONValue)]) -> WorkloadResult {
        WorkloadResult(
            workload: workload,
            records: recordCount,
            strataSeconds: Measurements.median(strataSeconds),
            baseline: .sqlite(seconds: Measurements.median(sqliteSeconds)),
            notes: "\(notes), median of \(strataSeconds.count); on disk Strata \(TreeWorkloads.size(strataStoreBytes)),"
                + " SQLite \(TreeWorkloads.size(sqliteStoreBytes)) (own process, peak \(TreeWorkloads.memory(sqlitePeakMemoryBytes)))",
            extra: extra + [
                ("strata_pass_seconds", .array(strataSeconds.map { .double($0) })),
                ("sqlite_pass_seconds", .array(sqliteSeconds.map { .double($0) })),
                ("strata_store_bytes", .int(Int64(clamping: strataStoreBytes))),
                ("sqlite_store_bytes", .int(Int64(clamping: sqliteStoreBytes))),
                ("sqlite_peak_memory_bytes", .int(Int64(clamping: sqlitePeakMemoryBytes))),
                ("verified_records", .int(Int64(PersonVerification.sampleIDs(recordCount: recordCount).count))),
            ]
        )
    }

    /// Part "sqlite": build (not timed), check, the timed passes; every pass must give the same answer.
    private static func runSQLitePart(_ context: WorkloadContext, pass: SQLitePass) throws -> JSONValue {
        let count = TreeWorkloads.recordCount(context.scale)
        let path = try TreeWorkloads.sqlitePath(context)
        try PersonTable.createWithPersons(at: path, count: count)
        let storeBytes = FolderSize.bytes(at: TreeWorkloads.sqliteFolder(context))

        let database = try SQLiteDatabase(path: path)
        let table = PersonTable(database: database)
        let sampleChecksum = try table.verifyPersons(count: count)
        sync()
        var seconds: [Double] = []
        var answer: UInt64?
        for _ in 0..<TreeWorkloads.repetitions(context.scale) {
            let timed = try Stopwatch.time { try pass(table) }
            if let answer, answer != timed.value {
                throw BenchmarkError.verificationFailed("SQLite's passes gave different answers: \(answer), then \(timed.value)")
            }
            answer = timed.value
            seconds.append(timed.seconds)
        }
        try database.close()
        return .object([
            ("seconds", .array(seconds.map { .double($0) })),
            ("answer", .int(Int64(bitPattern: answer ?? 0))),
            ("sample_checksum", .int(Int64(bitPattern: sampleChecksum.value))),
            ("store_bytes", .int(Int64(clamping: storeBytes))),
        ])
    }

    /// Part "build-strata": the Strata store, built as tree-insert builds it (one transaction),
    /// but relaxed since nothing is timed; closed.
    private static func buildStrataPart(_ context: WorkloadContext) throws -> JSONValue {
        let path = TreeWorkloads.strataPath(context)
        try RawRecordStore.createWithPersons(at: path, count: TreeWorkloads.recordCount(context.scale))
        return .object([("store_bytes", .int(Int64(clamping: FolderSize.bytes(at: path))))])
    }
}
