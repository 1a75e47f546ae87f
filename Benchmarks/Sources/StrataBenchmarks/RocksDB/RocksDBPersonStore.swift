/// The persons in RocksDB as a `PersonPeerStore` (`EncodedPersonStore`). A transaction of
/// the workloads is one `WriteBatch`.
final class RocksDBPersonStore: EncodedPersonStore {
    private let database: RocksDBDatabase
    private var batch: RocksDBWriteBatch?

    var engineName: String { "RocksDB" }

    /// Opens (creating when missing) the database in `folder`, with Strata's cache budget.
    init(folder: String) throws {
        database = try RocksDBDatabase(folder: folder, cacheBytes: PeerEngine.strataCacheBytes)
    }

    func beginWrite() throws { batch = RocksDBWriteBatch() }

    func put(_ id: UInt64, _ bytes: UnsafeRawBufferPointer) throws {
        guard let batch else { throw BenchmarkError.setupFailed("RocksDB: a put outside a write transaction") }
        batch.put(id, bytes)
    }

    func commitWrite() throws {
        guard let batch else { throw BenchmarkError.setupFailed("RocksDB: commit outside a write transaction") }
        self.batch = nil
        try database.write(batch)
    }

    /// Flushes the memtable to LZ4-compressed SST files (the store's final form, as Strata's
    /// is after its commit), then closes.
    func close() throws {
        batch = nil
        try database.flush()
        database.close()
    }

    func read<T>(_ body: (RocksDBSnapshot) throws -> T) throws -> T {
        try database.read(body)
    }
}

extension RocksDBSnapshot: EncodedPersonReader {
    /// Counts by iterating (RocksDB keeps only an estimate).
    func count() throws -> Int {
        var count = 0
        try forEach { _, _ in count += 1 }
        return count
    }
}
