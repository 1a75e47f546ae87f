import CLMDB
import Foundation

/// An LMDB environment (one folder: `data.mdb` and `lock.mdb`) with its unnamed database,
/// set up as a peer of Strata's engine: default flags, so every commit syncs (data pages,
/// then the meta page: LMDB's durable commit); reads go straight to the memory map (no copy,
/// no cache of its own: the OS page cache is LMDB's cache). Keys are record ids as 8
/// big-endian bytes, so the B+tree's byte order is id order.
///
/// Not thread-safe; one owner at a time.
final class LMDBEnvironment {
    private var environment: OpaquePointer?
    let folder: String

    /// How large the map may grow (virtual address space; the file grows as pages are used).
    static let mapSize = 4 << 30

    /// What the benchmarks' JSON rows record about LMDB's setup (`baseline_settings`).
    static var settings: JSONValue {
        .object([
            ("engine", .string(String(cString: mdb_version(nil, nil, nil)))),
            ("sync", .string("every commit fsyncs (default flags: data pages, then the meta page)")),
            ("cache", .string("none of its own: reads return pointers into the memory map (the OS page cache)")),
            ("map_size_bytes", .int(Int64(mapSize))),
            ("compression", .string("none (LMDB does not compress)")),
            ("keys", .string("8-byte big-endian ids, put in ascending order (no MDB_APPEND)")),
        ])
    }

    /// Opens (creating when missing) the environment in `folder`.
    init(folder: String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var created: OpaquePointer?
        try LMDBError.check(mdb_env_create(&created), "mdb_env_create")
        environment = created
        do {
            try LMDBError.check(mdb_env_set_mapsize(created, Self.mapSize), "mdb_env_set_mapsize")
            try LMDBError.check(mdb_env_open(created, folder, 0, 0o644), "mdb_env_open(\(folder))")
        } catch {
            mdb_env_close(created)
            environment = nil
            throw error
        }
    }

    deinit {
        if let environment { mdb_env_close(environment) }
    }

    /// Starts a write transaction (LMDB allows one at a time).
    func beginWrite() throws -> LMDBTransaction {
        try LMDBTransaction(environment: try open(), readOnly: false)
    }

    /// Runs `body` in a read-only transaction (one snapshot) and ends it.
    func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        let transaction = try LMDBTransaction(environment: try open(), readOnly: true)
        defer { transaction.abort() }
        return try body(transaction)
    }

    /// Closes the environment; transactions must have ended.
    func close() {
        if let environment { mdb_env_close(environment) }
        environment = nil
    }

    private func open() throws -> OpaquePointer {
        guard let environment else { throw LMDBError(code: EINVAL, operation: "use of a closed environment (\(folder))") }
        return environment
    }
}

/// A transaction on an `LMDBEnvironment`'s unnamed database. Values read are pointers into
/// the memory map, valid until the transaction ends. Not thread-safe.
final class LMDBTransaction {
    private var transaction: OpaquePointer?
    private var database: MDB_dbi = 0

    fileprivate init(environment: OpaquePointer, readOnly: Bool) throws {
        var started: OpaquePointer?
        try LMDBError.check(mdb_txn_begin(environment, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &started), "mdb_txn_begin")
        transaction = started
        do {
            try LMDBError.check(mdb_dbi_open(started, nil, 0, &database), "mdb_dbi_open")
        } catch {
            mdb_txn_abort(started)
            transaction = nil
            throw error
        }
    }

    deinit { abort() }

    /// Stores `value` under id `key` (replacing what was there).
    func put(_ key: UInt64, _ value: UnsafeRawBufferPointer) throws {
        var keyBytes = key.bigEndian
        try withUnsafeMutableBytes(of: &keyBytes) { keyBuffer in
            var keyValue = MDB_val(mv_size: 8, mv_data: keyBuffer.baseAddress)
            var dataValue = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            try LMDBError.check(mdb_put(try open(), database, &keyValue, &dataValue, 0), "mdb_put(id \(key))")
        }
    }

    /// The value stored under id `key`, in place in the map; nil when there is none.
    func get(_ key: UInt64) throws -> UnsafeRawBufferPointer? {
        var keyBytes = key.bigEndian
        return try withUnsafeMutableBytes(of: &keyBytes) { keyBuffer in
            var keyValue = MDB_val(mv_size: 8, mv_data: keyBuffer.baseAddress)
            var dataValue = MDB_val()
            let code = mdb_get(try open(), database, &keyValue, &dataValue)
            if code == MDB_NOTFOUND { return nil }
            try LMDBError.check(code, "mdb_get(id \(key))")
            return UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size)
        }
    }

    /// Calls `body` with every id and value in id order (a cursor over the whole database).
    func forEach(_ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        var cursor: OpaquePointer?
        try LMDBError.check(mdb_cursor_open(try open(), database, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var keyValue = MDB_val(), dataValue = MDB_val()
        while true {
            let code = mdb_cursor_get(cursor, &keyValue, &dataValue, MDB_NEXT)
            if code == MDB_NOTFOUND { return }
            try LMDBError.check(code, "mdb_cursor_get")
            guard keyValue.mv_size == 8, let keyData = keyValue.mv_data else {
                throw BenchmarkError.verificationFailed("LMDB: a key of \(keyValue.mv_size) bytes, not 8")
            }
            let id = UInt64(bigEndian: keyData.loadUnaligned(as: UInt64.self))
            try body(id, UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size))
        }
    }

    /// How many records the database holds.
    func count() throws -> Int {
        var statistics = MDB_stat()
        try LMDBError.check(mdb_stat(try open(), database, &statistics), "mdb_stat")
        return statistics.ms_entries
    }

    /// Commits (a write transaction: durably, syncing) and ends the transaction.
    func commit() throws {
        let code = mdb_txn_commit(try open())
        transaction = nil
        try LMDBError.check(code, "mdb_txn_commit")
    }

    /// Ends the transaction without committing; nothing when it has ended.
    func abort() {
        if let transaction { mdb_txn_abort(transaction) }
        transaction = nil
    }

    private func open() throws -> OpaquePointer {
        guard let transaction else { throw LMDBError(code: EINVAL, operation: "use of an ended transaction") }
        return transaction
    }
}
