import Foundation
import Strata

/// insert: the brief's 1,000,000 persons inserted through Strata's public API in one
/// transaction — a new `Store(at:for:)`, ONE `store.write { … }` (durable, the default) with
/// one `insert` per `PersonRecord` — against each peer inserting the same records in one
/// durable transaction (SQLite: one prepared INSERT binding id and three columns; LMDB: one
/// write transaction; RocksDB: one WriteBatch), each peer making the same `PersonRecord` of
/// every person first and writing its values, as an app using the engine through a Swift
/// wrapper would. Each side is timed from opening the new store to closing it, generating
/// each person included.
///
/// `Store.write` is the public API for one large transaction: records go into the store as
/// they are inserted (spilled to the log as buffers fill), so memory stays bounded. (A
/// `Context` keeps its unsaved changes in memory until `save()`, as SwiftData's does; it is
/// the unit of work for an app's edits, not for a million-record import.) How the runs
/// alternate and the stores are checked: `PeerInsertComparison`.
enum InsertWorkload {
    /// `insert`: `PersonRecord`, which codes itself by hand (the fast path).
    static let workload = make(name: "insert", type: PersonRecord.self,
                               summary: "1M PersonRecords (hand-coded) in one durable store.write transaction: public API vs. SQLite, LMDB, RocksDB")
    /// `insert-codable`: the same through `Codable` (`CodablePersonRecord`).
    static let codable = make(name: "insert-codable", type: CodablePersonRecord.self,
                              summary: "insert with CodablePersonRecord (synthesized Codable, no hand-coded path) vs. SQLite, LMDB, RocksDB")

    static func make<Record: BenchmarkPerson>(name: String, type: Record.Type, summary: String) -> Workload {
        PeerInsertComparison.workload(
            name: name, summary: summary, values: .records,
            strata: { path, count in try timeStrataInsert(at: path, count: count, as: Record.self) },
            verifyStrata: RecordAPIWorkloads.verifyStrataPart,
            notes: "1 durable store.write, open→close",
            generationSeconds: { count in generateAll(count: count, as: Record.self) }
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
