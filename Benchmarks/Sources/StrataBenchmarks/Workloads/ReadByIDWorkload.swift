import Foundation
import Strata

/// read-by-id: 100,000 random lookups by id (seeded; repeats allowed; the same ids as
/// tree-read-by-id) among the brief's 1,000,000 persons through the public API — in one
/// `store.read` transaction (one snapshot), `reader.record(for: RecordID<PersonRecord>(rawValue: id))`,
/// which decodes the record into a `PersonRecord` — against each peer's lookups by id in one
/// read transaction (SQLite's prepared `SELECT fullName, createdAt, note … WHERE id = ?`,
/// LMDB's `mdb_get`, RocksDB's pinned get) making the same `PersonRecord` of every row, as
/// an app using the engine through a Swift wrapper would. Every side sums `PersonChecksum`
/// over its records, which must equal the checksum of the persons as generated. How the
/// stores are built and the passes timed: `PeerReadComparison`.
enum ReadByIDWorkload {
    /// `read-by-id`: records decoded as `PersonRecord`, which codes itself by hand.
    static let workload = make(name: "read-by-id", type: PersonRecord.self,
                               summary: "100k random record(for:) in one store.read among 1M PersonRecords (hand-coded) vs. SQLite, LMDB, RocksDB making PersonRecords")
    /// `read-by-id-codable`: the same decoded through `Codable` (`CodablePersonRecord`).
    static let codable = make(name: "read-by-id-codable", type: CodablePersonRecord.self,
                              summary: "read-by-id decoding CodablePersonRecord (synthesized Codable) vs. SQLite, LMDB, RocksDB")

    static func make<Record: BenchmarkPerson>(name: String, type: Record.Type, summary: String) -> Workload {
        PeerReadComparison.workload(
            name: name, summary: summary,
            buildStrata: RecordAPIWorkloads.buildStrataPart,
            strata: { context in
                let ids = lookupIDs(count: RecordAPIWorkloads.recordCount(context.scale))
                return try RecordAPIWorkloads.timeStrataPass(context) { store in try read(ids, as: Record.self, in: store) }
            },
            peer: { scale in
                let ids = lookupIDs(count: RecordAPIWorkloads.recordCount(scale))
                return { store in PersonReadAnswer(count: ids.count, checksum: try store.checksumPersons(ids: ids, values: .records), ids: nil) }
            },
            expected: { scale in
                let ids = lookupIDs(count: RecordAPIWorkloads.recordCount(scale))
                return PersonReadAnswer(count: ids.count, checksum: PersonChecksum.expected(ids: ids), ids: nil)
            },
            describe: { answer in
                ("\(answer.count) lookups", [("lookups", .int(Int64(answer.count))),
                                              ("lookup_checksum", .int(Int64(bitPattern: answer.checksum.value)))])
            }
        )
    }

    /// The ids looked up, in order: the same in every process (and, for the same record
    /// count, the same as tree-read-by-id's).
    static func lookupIDs(count: Int) -> [UInt64] {
        Sample.randomIDs(count: 100_000, upTo: UInt64(count), seed: TreeReadByIDWorkload.lookupSeed)
    }

    /// Strata's pass: every id through `record(for:)` in one `store.read`.
    private static func read<Record: BenchmarkPerson>(_ ids: [UInt64], as type: Record.Type, in store: Store) throws -> PersonReadAnswer {
        try store.read { reader in
            var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: nil)
            for id in ids {
                guard let record = try reader.record(for: RecordID<Record>(rawValue: id)) else {
                    throw BenchmarkError.verificationFailed("Strata: person \(id) is missing")
                }
                answer.count += 1
                answer.checksum.add(record)
            }
            return answer
        }
    }
}
