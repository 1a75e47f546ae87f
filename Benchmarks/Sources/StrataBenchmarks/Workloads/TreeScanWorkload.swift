@_spi(Engine) import Strata

/// tree-scan: a full scan of the brief's 1,000,000 persons counting those whose note starts
/// with `Person.scanNotePrefix` (about 0.1% of them) — Strata through `scan` on one snapshot,
/// decoding each record's note from its bytes, against SQLite's prepared
/// `SELECT count(*) FROM person WHERE note LIKE 'prefix%'` (no index: a full table scan).
/// Both counts must equal the count among the persons as generated. How the stores are
/// built and the passes timed: `TreeReadComparison`.
enum TreeScanWorkload {
    static let workload = Workload(
        name: "tree-scan",
        summary: "count 1M persons whose note has a prefix (~0.1%): RawRecordStore scan vs. SQLite count(*) … LIKE",
        run: run,
        parts: TreeReadComparison.parts { _ in { table in UInt64(try table.countPersons(notePrefix: Person.scanNotePrefix)) } }
    )

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let expected = TreeWorkloads.generateAll(count: TreeWorkloads.recordCount(context.scale)).noteMatches
        let prefix = Array(Person.scanNotePrefix.utf8)
        let comparison = try TreeReadComparison.run(
            context, expected: UInt64(expected), describe: { "\($0) notes starting with '\(Person.scanNotePrefix)'" }
        ) { snapshot in UInt64(try snapshot.countPersons(notePrefix: prefix)) }
        return comparison.result(
            workload: workload.name,
            notes: "\(expected) of \(comparison.recordCount) match",
            extra: [("matches", .int(Int64(expected))), ("note_prefix", .string(Person.scanNotePrefix))]
        )
    }
}
