@_spi(Engine) import Strata
import Foundation

/// tree-insert: the brief's 1,000,000 persons inserted in ONE durable transaction into a new
/// store — Strata's `RawRecordStore` (ids from `allocateID`, each person in
/// `PersonEncoding`'s form, a `.durable` write) against SQLite (one prepared INSERT binding
/// id and three columns as bytes, BEGIN … COMMIT), LMDB (one write transaction of the same
/// encoded bytes) and RocksDB (one WriteBatch of them, sync=true). Raw bytes on every side.
/// Each side's time runs from opening the new store (SQLite: and creating the table) to
/// closing it, and includes generating each person from its id and encoding or binding it;
/// `generation_seconds` says how much of that is generating. How the runs alternate and the
/// stores are checked: `PeerInsertComparison`.
enum TreeInsertWorkload {
    static let workload = PeerInsertComparison.workload(
        name: "tree-insert",
        summary: "1M persons in one durable transaction, raw bytes: RawRecordStore vs. SQLite, LMDB, RocksDB",
        values: .bytes,
        strata: { path, count in try timeStrataInsert(at: path, count: count) },
        verifyStrata: TreeWorkloads.verifyStrataPart,
        notes: "1 durable txn, open→close",
        generationSeconds: { count in TreeWorkloads.generateAll(count: count).seconds }
    )

    /// Creates a store at `path`, inserts persons 1...count in one durable transaction and
    /// closes it, timing each phase.
    static func timeStrataInsert(at path: String, count: Int) throws -> InsertPhases {
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
}
