import CRocksDB
import Foundation

/// A RocksDB database (one folder) set up as a peer of Strata's engine, through the C API:
/// LZ4-compressed blocks, a block cache as large as Strata's node cache, a bloom filter of 10
/// bits per key (RocksDB's usual advice for point lookups), otherwise the defaults. A write
/// is one `WriteBatch` written with `sync = true` (the WAL is fsynced: a durable commit, as
/// Strata's); `flush()` turns the memtable into LZ4-compressed SST files. Reads take one
/// snapshot and use pinned slices (no copy out of the block cache). Keys are record ids as 8
/// big-endian bytes.
///
/// Not thread-safe; one owner at a time.
final class RocksDBDatabase {
    private var database: OpaquePointer?
    // The C API's constructors return optionals; they are nil only when out of memory.
    private let options: OpaquePointer?
    private let tableOptions: OpaquePointer?
    private let cache: OpaquePointer?
    private let filter: OpaquePointer?
    let folder: String

    /// What the benchmarks' JSON rows record about RocksDB's setup (`baseline_settings`).
    static func settings(cacheBytes: Int) -> JSONValue {
        .object([
            ("engine", .string("RocksDB (C API, librocksdb-dev)")),
            ("sync", .string("one WriteBatch per transaction written with sync=true (WAL fsynced at commit); memtable flushed to SST before close")),
            ("cache_bytes", .int(Int64(cacheBytes))),
            ("compression", .string("LZ4")),
            ("bloom_bits_per_key", .int(10)),
            ("reads", .string("one snapshot per pass, pinned slices (no copy)")),
            ("keys", .string("8-byte big-endian ids")),
        ])
    }

    /// Opens (creating when missing) the database in `folder` with a block cache of `cacheBytes`.
    init(folder: String, cacheBytes: Int) throws {
        self.folder = folder
        options = rocksdb_options_create()
        tableOptions = rocksdb_block_based_options_create()
        cache = rocksdb_cache_create_lru(cacheBytes)
        filter = rocksdb_filterpolicy_create_bloom(10)
        rocksdb_block_based_options_set_block_cache(tableOptions, cache)
        rocksdb_block_based_options_set_filter_policy(tableOptions, filter)
        rocksdb_options_set_block_based_table_factory(options, tableOptions)
        rocksdb_options_set_create_if_missing(options, 1)
        rocksdb_options_set_compression(options, Int32(rocksdb_lz4_compression))
        var error: UnsafeMutablePointer<CChar>?
        let opened = rocksdb_open(options, folder, &error)
        try Self.check(error, "rocksdb_open(\(folder))")
        database = opened
    }

    deinit {
        if let database { rocksdb_close(database) }
        rocksdb_block_based_options_destroy(tableOptions)
        rocksdb_options_destroy(options)
        rocksdb_cache_destroy(cache)
        // The filter policy belongs to the table options once set; not destroyed here.
    }

    /// Writes `batch` atomically, syncing the WAL (a durable commit).
    func write(_ batch: RocksDBWriteBatch) throws {
        let writeOptions = rocksdb_writeoptions_create()
        defer { rocksdb_writeoptions_destroy(writeOptions) }
        rocksdb_writeoptions_set_sync(writeOptions, 1)
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_write(try open(), writeOptions, batch.batch, &error)
        try Self.check(error, "rocksdb_write")
    }

    /// Writes the memtable to SST files and waits for it.
    func flush() throws {
        let flushOptions = rocksdb_flushoptions_create()
        defer { rocksdb_flushoptions_destroy(flushOptions) }
        rocksdb_flushoptions_set_wait(flushOptions, 1)
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_flush(try open(), flushOptions, &error)
        try Self.check(error, "rocksdb_flush")
    }

    /// Runs `body` on one snapshot of the database.
    func read<T>(_ body: (RocksDBSnapshot) throws -> T) throws -> T {
        let handle = try open()
        let snapshot = rocksdb_create_snapshot(handle)
        let readOptions = rocksdb_readoptions_create()
        defer {
            rocksdb_readoptions_destroy(readOptions)
            rocksdb_release_snapshot(handle, snapshot)
        }
        rocksdb_readoptions_set_snapshot(readOptions, snapshot)
        return try body(RocksDBSnapshot(database: handle, readOptions: readOptions))
    }

    /// Closes the database.
    func close() {
        if let database { rocksdb_close(database) }
        database = nil
    }

    private func open() throws -> OpaquePointer {
        guard let database else { throw RocksDBError(message: "the database is closed", operation: folder) }
        return database
    }

    /// Throws the error RocksDB reported in `error` (and frees it), if any.
    static func check(_ error: UnsafeMutablePointer<CChar>?, _ operation: @autoclosure () -> String) throws {
        guard let error else { return }
        let message = String(cString: error)
        rocksdb_free(error)
        throw RocksDBError(message: message, operation: operation())
    }
}

/// A batch of puts, written atomically by `RocksDBDatabase.write`. Not thread-safe.
final class RocksDBWriteBatch {
    fileprivate let batch: OpaquePointer? = rocksdb_writebatch_create()

    deinit { rocksdb_writebatch_destroy(batch) }

    /// Adds a put of `value` under id `key` (RocksDB copies both).
    func put(_ key: UInt64, _ value: UnsafeRawBufferPointer) {
        var keyBytes = key.bigEndian
        withUnsafeBytes(of: &keyBytes) { keyBuffer in
            rocksdb_writebatch_put(batch, keyBuffer.baseAddress?.assumingMemoryBound(to: CChar.self), 8,
                                   value.baseAddress?.assumingMemoryBound(to: CChar.self), value.count)
        }
    }
}

/// Reads on one snapshot (`RocksDBDatabase.read`). Not thread-safe.
struct RocksDBSnapshot {
    fileprivate let database: OpaquePointer
    fileprivate let readOptions: OpaquePointer?

    /// Calls `body` with the value stored under id `key` (pinned, not copied; valid only
    /// during the call) and returns what it returns; nil when there is no such key.
    func withValue<T>(_ key: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        var keyBytes = key.bigEndian
        var error: UnsafeMutablePointer<CChar>?
        let pinned = withUnsafeBytes(of: &keyBytes) { keyBuffer in
            rocksdb_get_pinned(database, readOptions, keyBuffer.baseAddress?.assumingMemoryBound(to: CChar.self), 8, &error)
        }
        try RocksDBDatabase.check(error, "rocksdb_get_pinned(id \(key))")
        guard let pinned else { return nil }
        defer { rocksdb_pinnableslice_destroy(pinned) }
        var length = 0
        let value = rocksdb_pinnableslice_value(pinned, &length)
        return try body(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// Calls `body` with every id and value in id order (one iterator over the snapshot).
    func forEach(_ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        let iterator = rocksdb_create_iterator(database, readOptions)
        defer { rocksdb_iter_destroy(iterator) }
        rocksdb_iter_seek_to_first(iterator)
        while rocksdb_iter_valid(iterator) != 0 {
            var keyLength = 0, valueLength = 0
            let key = rocksdb_iter_key(iterator, &keyLength)
            let value = rocksdb_iter_value(iterator, &valueLength)
            guard keyLength == 8, let key else {
                throw BenchmarkError.verificationFailed("RocksDB: a key of \(keyLength) bytes, not 8")
            }
            let id = UInt64(bigEndian: UnsafeRawPointer(key).loadUnaligned(as: UInt64.self))
            try body(id, UnsafeRawBufferPointer(start: value, count: valueLength))
            rocksdb_iter_next(iterator)
        }
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_iter_get_error(iterator, &error)
        try RocksDBDatabase.check(error, "rocksdb iterator")
    }
}
