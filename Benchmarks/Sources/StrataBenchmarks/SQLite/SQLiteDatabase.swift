import CSQLite

/// A connection to a SQLite database set up as the benchmarks' baseline, per the brief:
/// WAL journal, `synchronous=NORMAL`, prepared statements, work in explicit transactions —
/// and what Strata gets: a page cache as large as Strata's (`cache_size`, 32 MiB) and reads
/// through a memory map covering the file (`mmap_size`, as Strata maps its segments).
///
/// Not thread-safe; one owner at a time. The connection closes when `close()` is called or
/// the object is released.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String

    /// Opens (creating when missing) the database at `path` and sets WAL mode and
    /// `synchronous=NORMAL`. Throws `SQLiteError` when it cannot, or when WAL is refused.
    init(path: String) throws {
        self.path = path
        var connection: OpaquePointer?
        let code = sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        handle = connection
        guard code == SQLITE_OK else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(connection)
            handle = nil
            throw SQLiteError(code: code, message: message, sql: nil)
        }
        let journalMode = try prepare("PRAGMA journal_mode=WAL")
        guard try journalMode.step(), journalMode.text(at: 0)?.lowercased() == "wal" else {
            throw SQLiteError(code: SQLITE_ERROR, message: "\(path) did not switch to WAL mode", sql: "PRAGMA journal_mode=WAL")
        }
        try execute("PRAGMA synchronous=NORMAL")
        try execute("PRAGMA cache_size=-\(Self.cacheBytes / 1024)")
        try execute("PRAGMA mmap_size=\(Self.mmapBytes)")
    }

    /// The page cache: Strata's cache budget (`PeerEngine.strataCacheBytes`).
    static let cacheBytes = PeerEngine.strataCacheBytes
    /// The memory map's size: larger than any database the workloads write (SQLite caps it
    /// at its compile-time SQLITE_MAX_MMAP_SIZE, 2 GB in Debian's build).
    static let mmapBytes: Int64 = 0x7FFF_0000

    /// What the benchmarks' JSON rows record about SQLite's setup (`baseline_settings`).
    static var settings: JSONValue {
        .object([
            ("engine", .string("SQLite \(String(cString: sqlite3_libversion()))")),
            ("sync", .string("WAL, synchronous=NORMAL: a commit is not fsynced; the checkpoint on close fsyncs the WAL and the database (inside the timed open→close)")),
            ("cache_bytes", .int(Int64(cacheBytes))),
            ("mmap_size_bytes", .int(mmapBytes)),
            ("compression", .string("none")),
            ("statements", .string("prepared once; text bound with SQLITE_STATIC (no copy)")),
            ("scan_predicate", .string("note GLOB 'prefix*' (case-sensitive, as Strata's starts(with:))")),
        ])
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Runs one or more SQL statements that return no rows of interest.
    func execute(_ sql: String) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        defer { sqlite3_free(errorMessage) }
        guard code == SQLITE_OK else {
            throw SQLiteError(code: code, message: errorMessage.map { String(cString: $0) } ?? lastErrorMessage, sql: sql)
        }
    }

    /// Compiles one statement for repeated use.
    func prepare(_ sql: String) throws -> SQLiteStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw SQLiteError(code: code, message: lastErrorMessage, sql: sql)
        }
        return SQLiteStatement(statement: statement, database: self, sql: sql)
    }

    /// Runs `body` in one transaction (BEGIN … COMMIT); rolls back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Closes the connection; statements must have been released first.
    func close() throws {
        let code = sqlite3_close(handle)
        guard code == SQLITE_OK else { throw SQLiteError(code: code, message: lastErrorMessage, sql: nil) }
        handle = nil
    }

    /// SQLite's message for the connection's last error.
    var lastErrorMessage: String {
        handle.map { String(cString: sqlite3_errmsg($0)) } ?? "the connection is closed"
    }
}
