import Foundation
import Strata

/// read-by-id: 100,000 random lookups by id (seeded; repeats allowed; the same ids as
/// tree-read-by-id) among the brief's 1,000,000 persons through the public API — in one
/// `store.read` transaction (one snapshot), `reader.record(for: RecordID<PersonRecord>(rawValue: id))`,
/// which decodes the record into a `PersonRecord` — against SQLite's prepared
/// `SELECT fullName, createdAt, note … WHERE id = ?` in one read transaction (tree-read-by-id's
/// baseline). Both sides read every field of every record into `PersonChecksum`, which must
/// equal the checksum of the persons as generated. How the stores are built and the passes
/// timed: `RecordAPIReadComparison`.
enum ReadByIDWorkload {
    /// `read-by-id`: records decoded as `PersonRecord`, which codes itself by hand.
    static let workload = make(name: "read-by-id", type: PersonRecord.self,
                               summary: "100k random record(for:) in one store.read among 1M PersonRecords (hand-coded) vs. SQLite SELECT … WHERE id = ?")
    /// `read-by-id-codable`: the same decoded through `Codable` (`CodablePersonRecord`).
    static let codable = make(name: "read-by-id-codable", type: CodablePersonRecord.self,
                              summary: "read-by-id decoding CodablePersonRecord (synthesized Codable) vs. SQLite")

    static func make<Record: BenchmarkPerson>(name: String, type: Record.Type, summary: String) -> Workload {
        Workload(
            name: name,
            summary: summary,
            run: { context in try run(context, name: name, type: type) },
            parts: RecordAPIReadComparison.parts { count in
                let ids = lookupIDs(count: count)
                return { table in PersonReadAnswer(count: ids.count, checksum: try table.checksumPersons(ids: ids), ids: nil) }
            }
        )
    }

    /// The ids looked up, in order: the same in every process (and, for the same record
    /// count, the same as tree-read-by-id's).
    static func lookupIDs(count: Int) -> [UInt64] {
        Sample.randomIDs(count: 100_000, upTo: UInt64(count), seed: TreeReadByIDWorkload.lookupSeed)
    }

    static func run<Record: BenchmarkPerson>(_ context: WorkloadContext, name: String, type: Record.Type) throws -> WorkloadResult {
        let ids = lookupIDs(count: RecordAPIWorkloads.recordCount(context.scale))
        let expected = PersonReadAnswer(count: ids.count, checksum: PersonChecksum.expected(ids: ids), ids: nil)
        let comparison = try RecordAPIReadComparison.run(context, expected: expected) { store in
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
        return comparison.result(
            workload: name,
            notes: "\(ids.count) lookups",
            extra: [("lookups", .int(Int64(ids.count))), ("lookup_checksum", .int(Int64(bitPattern: expected.checksum.value)))]
        )
    }
}
