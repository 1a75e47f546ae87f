import Foundation
import Strata

/// scan-filter: every person whose note starts with `Person.scanNotePrefix` (about 0.1% of
/// the brief's 1,000,000; the note is not indexed; case-sensitive) through the public API —
/// `context.fetch(FetchDescriptor<PersonRecord>(predicate: #Predicate { $0.note.starts(with: prefix) }))`,
/// which decodes every record and evaluates the predicate on it — against SQLite's prepared
/// `SELECT id, fullName, createdAt, note FROM person WHERE note GLOB 'prefix*'` (a full table
/// scan; GLOB is case-sensitive as `starts(with:)` is, LIKE is not) and a cursor over every
/// record of LMDB and RocksDB comparing the note's bytes. Every side makes a `PersonRecord`
/// of each match and must return the ids of the matching persons as generated, in id
/// order, and the checksum of their values. How the stores are built and the passes timed:
/// `PeerReadComparison`.
enum ScanFilterWorkload {
    static let workload = PeerReadComparison.workload(
        name: "scan-filter",
        summary: "fetch with #Predicate note.starts(with:) (~0.1%) over 1M PersonRecords vs. SQLite … GLOB 'prefix*', LMDB, RocksDB cursors",
        buildStrata: RecordAPIWorkloads.buildStrataPart,
        strata: { context in
            try RecordAPIWorkloads.timeStrataPass(context) { store in
                let prefix = Person.scanNotePrefix
                let matches = try Context(store).fetch(FetchDescriptor<PersonRecord>(predicate: #Predicate { $0.note.starts(with: prefix) }))
                var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
                for match in matches {
                    answer.count += 1
                    answer.checksum.add(match.record)
                    answer.ids?.append(match.id.rawValue)
                }
                return answer
            }
        },
        peer: { _ in { store in try store.selectPersons(notePrefix: Person.scanNotePrefix, values: .records) } },
        expected: { scale in RecordAPIWorkloads.expectedNoteMatches(count: RecordAPIWorkloads.recordCount(scale)) },
        describe: { answer in
            ("\(answer.count) match", [("matches", .int(Int64(answer.count))), ("note_prefix", .string(Person.scanNotePrefix))])
        }
    )
}
