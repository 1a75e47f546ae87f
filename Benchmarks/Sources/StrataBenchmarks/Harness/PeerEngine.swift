import Foundation

/// The engines Strata is compared with on the person workloads, each in the setup the
/// brief asks for (what Strata gets: the same cache, memory maps, predicate semantics,
/// durable commits). Every one runs the same generator, ids, predicate and checks through
/// `PersonPeerStore`.
enum PeerEngine: String, CaseIterable, Sendable {
    case sqlite
    case lmdb
    case rocksdb

    /// The budget of Strata's cache in these workloads (`Store.Configuration.cacheBytes` and
    /// `RawRecordStore.open`'s default, 32 MiB): what each peer's own cache gets.
    static let strataCacheBytes = 32 << 20

    /// The peer's settings, printed and written to each JSON row as `baseline_settings`.
    var settings: JSONValue {
        switch self {
        case .sqlite: SQLiteDatabase.settings
        case .lmdb: LMDBEnvironment.settings
        case .rocksdb: RocksDBDatabase.settings(cacheBytes: Self.strataCacheBytes)
        }
    }

    /// The peer's folder in a workload's folder.
    func folder(_ context: WorkloadContext) -> String {
        context.path(rawValue)
    }

    /// Opens (creating when missing) the peer's store in `folder`.
    func open(folder: String) throws -> any PersonPeerStore {
        switch self {
        case .sqlite: try SQLitePersonStore(folder: folder)
        case .lmdb: try LMDBPersonStore(folder: folder)
        case .rocksdb: try RocksDBPersonStore(folder: folder)
        }
    }

    /// Creates the peer's store in `folder` (removing what was there) holding persons
    /// 1...count, inserted in one transaction; closes it.
    func createWithPersons(folder: String, count: Int) throws {
        try? FileManager.default.removeItem(atPath: folder)
        let store = try open(folder: folder)
        try store.beginWrite()
        try store.insertPersons(count: count, values: .bytes)
        try store.commitWrite()
        try store.close()
    }
}

/// What a person workload hands a store and gets back: raw bytes (the engine rows, `tree-*`:
/// each side's encoded fields, read in place where the engine allows) or the Swift values an
/// app builds (the record-API rows: a `PersonRecord` — two Strings and a Date — made for
/// every record written or read, as an app using the engine through a Swift wrapper would).
enum PersonValues: Sendable {
    case bytes
    case records
}

/// A peer's store of the reference persons (ids 1...count), as each workload uses it.
/// Errors are the engine's own (`SQLiteError`, `LMDBError`, `RocksDBError`) or
/// `BenchmarkError.verificationFailed` for what was read back wrong. Not thread-safe.
protocol PersonPeerStore: AnyObject {
    /// Starts the one write transaction of an insert.
    func beginWrite() throws
    /// Inserts persons 1...count, generating each as it goes (and, for `.records`, making
    /// it a `PersonRecord` first).
    func insertPersons(count: Int, values: PersonValues) throws
    /// Commits the write transaction durably (see each engine's settings).
    func commitWrite() throws
    /// Closes the store, making everything durable in its final form.
    func close() throws

    /// Checks the count and `PersonVerification`'s sample; returns the sample's checksum.
    func verifyPersons(count: Int) throws -> PersonChecksum
    /// Reads persons `ids` one lookup at a time in one read transaction; their checksum.
    func checksumPersons(ids: [UInt64], values: PersonValues) throws -> PersonChecksum
    /// Every person whose note starts with `prefix` (bytes compared: case-sensitive, Strata's
    /// semantics) in id order, in one read transaction, each matching record read in full.
    func selectPersons(notePrefix prefix: String, values: PersonValues) throws -> PersonReadAnswer
    /// How many persons' notes start with `prefix` (case-sensitive).
    func countPersons(notePrefix prefix: String) throws -> Int
}

extension PersonChecksum {
    /// Adds one record read as bytes: in place (`.bytes`), or made a `PersonRecord` first
    /// (`.records`), as the workload asks.
    mutating func add(fullName: UnsafeRawBufferPointer, createdAt: Double, note: UnsafeRawBufferPointer, as values: PersonValues) {
        switch values {
        case .bytes:
            add(fullName: fullName, createdAt: createdAt, note: note)
        case .records:
            add(PersonRecord(fullName: String(decoding: fullName, as: UTF8.self),
                             createdAt: Date(timeIntervalSince1970: createdAt),
                             note: String(decoding: note, as: UTF8.self)))
        }
    }

    /// Adds one record in `PersonEncoding`'s form; throws when the bytes are not one.
    mutating func add(encoded bytes: UnsafeRawBufferPointer, id: UInt64, as values: PersonValues, store: String) throws {
        guard let fields = PersonEncoding.decode(bytes) else {
            throw BenchmarkError.verificationFailed("\(store): person \(id) is not a valid encoding (\(bytes.count) bytes)")
        }
        add(fullName: UnsafeRawBufferPointer(rebasing: bytes[fields.fullName]), createdAt: fields.createdAt,
            note: UnsafeRawBufferPointer(rebasing: bytes[fields.note]), as: values)
    }
}
