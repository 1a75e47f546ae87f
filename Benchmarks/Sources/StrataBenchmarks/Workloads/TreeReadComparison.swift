@_spi(Engine) import Strata
import Foundation

/// What a read comparison with SQLite alone measured (`RecordAPIReadComparison`, used by
/// the count workloads): each side's passes, sizes and SQLite's peak, and the row made of
/// them. The peer rows (tree-*, read-by-id, scan-filter) use `PeerReadComparison`.
struct TreeReadComparison {
    var strataSeconds: [Double]
    var sqliteSeconds: [Double]
    var strataStoreBytes: UInt64
    var sqliteStoreBytes: UInt64
    var sqlitePeakMemoryBytes: UInt64
    var recordCount: Int

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
}
