import Foundation
import Strata

/// scan-filter: every person whose note starts with `Person.scanNotePrefix` (about 0.1% of
/// the brief's 1,000,000; the note is not indexed) through the public API —
/// `context.fetch(FetchDescriptor<PersonRecord>(predicate: #Predicate { $0.note.starts(with: prefix) }))`,
/// which decodes every record and evaluates the predicate on it — against SQLite's prepared
/// `SELECT id, fullName, createdAt, note FROM person WHERE note LIKE 'prefix%'` (a full table
/// scan) reading every row returned. Both sides must return the ids of the matching persons
/// as generated, in id order, and the checksum of their values. How the stores are built and
/// the passes timed: `RecordAPIReadComparison`.
enum ScanFilterWorkload {
    static let workload = Workload(
        name: "scan-filter",
        summary: "fetch with #Predicate note.starts(with:) (~0.1%) over 1M PersonRecords vs. SQLite SELECT … LIKE 'prefix%'",
        run: run,
        parts: RecordAPIReadComparison.parts { _ in
            { table in
                let (ids, checksum) = try table.selectPersons(notePrefix: Person.scanNotePrefix)
                return PersonReadAnswer(count: ids.count, checksum: checksum, ids: ids)
            }
        }
    )

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let expected = RecordAPIWorkloads.expectedNoteMatches(count: RecordAPIWorkloads.recordCount(context.scale))
        let comparison = try RecordAPIReadComparison.run(context, expected: expected) { store in
            let recordContext = Context(store)
            let prefix = Person.scanNotePrefix
            let matches = try recordContext.fetch(FetchDescriptor<PersonRecord>(predicate: #Predicate { $0.note.starts(with: prefix) }))
            var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
            for match in matches {
                answer.count += 1
                answer.checksum.add(match.record)
                answer.ids?.append(match.id.rawValue)
            }
            return answer
        }
        return comparison.result(
            workload: workload.name,
            notes: "\(expected.count) of \(comparison.recordCount) match",
            extra: [("matches", .int(Int64(expected.count))), ("note_prefix", .string(Person.scanNotePrefix))]
        )
    }
}
