@_spi(Engine) import Strata

/// tree-read-by-id: 100,000 random lookups by id (seeded; the same ids, repeats allowed, on
/// every side) among the brief's 1,000,000 persons — Strata through `get` on one snapshot,
/// SQLite through a prepared `SELECT … WHERE id = ?` in one read transaction, LMDB through
/// `mdb_get` in one read transaction, RocksDB through `rocksdb_get_pinned` on one snapshot.
/// Raw bytes on every side: each decodes the record's fields in place (no Swift values
/// built) and sums `PersonChecksum` over them, which must equal the checksum of the persons
/// as generated. How the stores are built and the passes timed: `PeerReadComparison`.
enum TreeReadByIDWorkload {
    static let workload = PeerReadComparison.workload(
        name: "tree-read-by-id",
        summary: "100k random lookups by id among 1M persons, raw bytes: RawRecordStore snapshot get vs. SQLite, LMDB, RocksDB",
        buildStrata: TreeWorkloads.buildStrataPart,
        strata: { context in
            let ids = lookupIDs(context.scale)
            return try TreeWorkloads.timeStrataPass(context) { snapshot in
                PersonReadAnswer(count: ids.count, checksum: try snapshot.checksumPersons(ids: ids), ids: nil)
            }
        },
        peer: { scale in
            let ids = lookupIDs(scale)
            return { store in PersonReadAnswer(count: ids.count, checksum: try store.checksumPersons(ids: ids, values: .bytes), ids: nil) }
        },
        expected: { scale in
            let ids = lookupIDs(scale)
            return PersonReadAnswer(count: ids.count, checksum: PersonChecksum.expected(ids: ids), ids: nil)
        },
        describe: { answer in
            ("\(answer.count) lookups", [("lookups", .int(Int64(answer.count))),
                                          ("lookup_checksum", .int(Int64(bitPattern: answer.checksum.value)))])
        }
    )

    /// The seed of the lookup ids ("LOOKUP").
    static let lookupSeed: UInt64 = 0x4C4F_4F4B_5550

    /// The ids looked up, in order: the same in every process.
    static func lookupIDs(_ scale: WorkloadScale) -> [UInt64] {
        Sample.randomIDs(count: 100_000, upTo: UInt64(TreeWorkloads.recordCount(scale)), seed: lookupSeed)
    }
}
