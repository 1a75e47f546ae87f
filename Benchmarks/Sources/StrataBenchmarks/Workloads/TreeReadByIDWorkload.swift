@_spi(Engine) import Strata

/// tree-read-by-id: 100,000 random lookups by id (seeded; the same ids, repeats allowed, on
/// both sides) among the brief's 1,000,000 persons — Strata through `get` on one snapshot,
/// SQLite through a prepared `SELECT … WHERE id = ?` in one read transaction. Both decode
/// every record read and sum `PersonChecksum` over them, which must equal the checksum of
/// the persons as generated. How the stores are built and the passes timed:
/// `TreeReadComparison`.
enum TreeReadByIDWorkload {
    static let workload = Workload(
        name: "tree-read-by-id",
        summary: "100k random lookups by id among 1M persons: RawRecordStore snapshot get vs. SQLite SELECT … WHERE id = ?",
        run: run,
        parts: TreeReadComparison.parts { scale in
            let ids = lookupIDs(scale)
            return { table in try table.checksumPersons(ids: ids).value }
        }
    )

    /// The seed of the lookup ids ("LOOKUP").
    static let lookupSeed: UInt64 = 0x4C4F_4F4B_5550

    /// The ids looked up, in order: the same in every process.
    static func lookupIDs(_ scale: WorkloadScale) -> [UInt64] {
        Sample.randomIDs(count: 100_000, upTo: UInt64(TreeWorkloads.recordCount(scale)), seed: lookupSeed)
    }

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let ids = lookupIDs(context.scale)
        let expected = PersonChecksum.expected(ids: ids)
        let comparison = try TreeReadComparison.run(context, expected: expected.value, describe: { "a checksum of \($0)" }) {
            snapshot in try snapshot.checksumPersons(ids: ids).value
        }
        return comparison.result(
            workload: workload.name,
            notes: "\(ids.count) lookups",
            extra: [("lookups", .int(Int64(ids.count))), ("lookup_checksum", .int(Int64(bitPattern: expected.value)))]
        )
    }
}
