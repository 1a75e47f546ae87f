/// The persons in LMDB as a `PersonPeerStore` (`EncodedPersonStore`), read in place from
/// the memory map. A transaction of the workloads is one LMDB write transaction.
final class LMDBPersonStore: EncodedPersonStore {
    private let environment: LMDBEnvironment
    private var writer: LMDBTransaction?

    var engineName: String { "LMDB" }

    /// Opens (creating when missing) the environment in `folder`.
    init(folder: String) throws {
        environment = try LMDBEnvironment(folder: folder)
    }

    func beginWrite() throws { writer = try environment.beginWrite() }

    func put(_ id: UInt64, _ bytes: UnsafeRawBufferPointer) throws {
        guard let writer else { throw BenchmarkError.setupFailed("LMDB: a put outside a write transaction") }
        try writer.put(id, bytes)
    }

    func commitWrite() throws {
        guard let writer else { throw BenchmarkError.setupFailed("LMDB: commit outside a write transaction") }
        self.writer = nil
        try writer.commit()
    }

    func close() throws {
        writer?.abort()
        writer = nil
        environment.close()
    }

    func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        try environment.read(body)
    }
}

extension LMDBTransaction: EncodedPersonReader {
    func withValue<T>(_ id: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        try get(id).map(body)
    }
}
