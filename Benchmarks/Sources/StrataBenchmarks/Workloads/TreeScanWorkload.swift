@_spi(Engine) import Strata

/// tree-scan: a full scan of the brief's 1,000,000 persons counting those whose note starts
/// with `Person.scanNotePrefix` (about 0.1% of them; bytes compared, case-sensitive) —
/// Strata through `scan` on one snapshot, decoding each record's note from its bytes,
/// against SQLite's prepared `SELECT count(*) FROM person WHERE note GLOB 'prefix*'` (no
/// index: a full table scan) and a cursor over every record of LMDB and RocksDB decoding
/// the note the same way. Every count must equal the count among the persons as generated.
/// How the stores are built and the passes timed: `PeerReadComparison`.
enum TreeScanWorkload {
    static let workload = PeerReadComparison.workload(
        name: "tree-scan",
        summary: "count 1M persons whose note has a prefix (~0.1%): RawRecordStore scan vs. SQLite count(*) … GLOB, LMDB, RocksDB cursors",
        buildStrata: TreeWorkloads.buildStrataPart,
        strata: { context in
            let prefix = Array(Person.scanNotePrefix.utf8)
            return try TreeWorkloads.timeStrataPass(context) { snapshot in
                PersonReadAnswer(count: try snapshot.countPersons(notePrefix: prefix), checksum: PersonChecksum(), ids: nil)
            }
        },
        peer: { _ in
            { store in PersonReadAnswer(count: try store.countPersons(notePrefix: Person.scanNotePrefix), checksum: PersonChecksum(), ids: nil) }
        },
        expected: { scale in
            PersonReadAnswer(count: TreeWorkloads.generateAll(count: TreeWorkloads.recordCount(scale)).noteMatches,
                             checksum: PersonChecksum(), ids: nil)
        },
        describe: { answer in
            ("\(answer.count) match", [("matches", .int(Int64(answer.count))), ("note_prefix", .string(Person.scanNotePrefix))])
        }
    )
}
