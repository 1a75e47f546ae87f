import Foundation
import Strata

/// count and count-filter: how many of the brief's 1,000,000 persons a fetch descriptor selects,
/// through the public API's `Context.fetchCount`, against SQLite's prepared `SELECT count(*)`.
///
/// - `count`: `fetchCount(FetchDescriptor<PersonRecord>())` — no predicate: Strata reads the
///   record count its store root keeps (no record is read) — against
///   `SELECT count(*) FROM person`.
/// - `count-filter`: `fetchCount` with `#Predicate { $0.note.starts(with: prefix) }` (about
///   0.1 % match, as in scan-filter) — Strata's byte-level pre-filter rejects the other records
///   without decoding them and the byte matches are decoded and given to the predicate (a
///   combining mark after the prefix could change the last character); nothing is collected —
///   against `SELECT count(*) FROM person WHERE note GLOB 'prefix*'` (a full table scan).
///
/// Each pass runs on a new `Context`; both sides must give the count among the persons as
/// generated. How the stores are built and the passes timed: `RecordAPIReadComparison` (SQLite
/// with the same settings as every record workload), with more passes than the other read
/// workloads since one is short (`repetitions`).
enum CountWorkloads {
    /// Timed passes on each side.
    static func repetitions(_ scale: WorkloadScale) -> Int {
        scale.pick(quick: 11, full: 25)
    }

    static let all = Workload(
        name: "count",
        summary: "fetchCount of 1M PersonRecords without predicate vs. SQLite SELECT count(*)",
        run: runAll,
        parts: RecordAPIReadComparison.parts(repetitions: repetitions) { _ in
            { table in PersonReadAnswer(count: try table.countPersons(), checksum: PersonChecksum(), ids: nil) }
        }
    )

    static let filtered = Workload(
        name: "count-filter",
        summary: "fetchCount with #Predicate note.starts(with:) (~0.1%) over 1M PersonRecords vs. SQLite SELECT count(*) … GLOB",
        run: runFiltered,
        parts: RecordAPIReadComparison.parts(repetitions: repetitions) { _ in
            { table in
                PersonReadAnswer(count: try table.countPersons(notePrefix: Person.scanNotePrefix), checksum: PersonChecksum(), ids: nil)
            }
        }
    )

    static func runAll(_ context: WorkloadContext) throws -> WorkloadResult {
        let count = RecordAPIWorkloads.recordCount(context.scale)
        let expected = PersonReadAnswer(count: count, checksum: PersonChecksum(), ids: nil)
        let comparison = try RecordAPIReadComparison.run(context, expected: expected, repetitions: repetitions(context.scale)) { store in
            PersonReadAnswer(count: try Context(store).fetchCount(FetchDescriptor<PersonRecord>()), checksum: PersonChecksum(), ids: nil)
        }
        return comparison.result(workload: all.name, notes: "\(count) counted", extra: ranges(comparison))
    }

    static func runFiltered(_ context: WorkloadContext) throws -> WorkloadResult {
        let expected = RecordAPIWorkloads.expectedNoteMatches(count: RecordAPIWorkloads.recordCount(context.scale))
        let answer = PersonReadAnswer(count: expected.count, checksum: PersonChecksum(), ids: nil)
        let prefix = Person.scanNotePrefix
        let comparison = try RecordAPIReadComparison.run(context, expected: answer, repetitions: repetitions(context.scale)) { store in
            let matches = try Context(store).fetchCount(FetchDescriptor<PersonRecord>(predicate: #Predicate { $0.note.starts(with: prefix) }))
            return PersonReadAnswer(count: matches, checksum: PersonChecksum(), ids: nil)
        }
        return comparison.result(
            workload: filtered.name,
            notes: "\(expected.count) of \(comparison.recordCount) match",
            extra: [("matches", .int(Int64(expected.count))), ("note_prefix", .string(Person.scanNotePrefix))] + ranges(comparison)
        )
    }

    /// The fastest and slowest pass on each side (the table shows medians).
    static func ranges(_ comparison: TreeReadComparison) -> [(key: String, value: JSONValue)] {
        [
            ("strata_pass_range_seconds", .array([.double(comparison.strataSeconds.min() ?? 0), .double(comparison.strataSeconds.max() ?? 0)])),
            ("sqlite_pass_range_seconds", .array([.double(comparison.sqliteSeconds.min() ?? 0), .double(comparison.sqliteSeconds.max() ?? 0)])),
        ]
    }
}
