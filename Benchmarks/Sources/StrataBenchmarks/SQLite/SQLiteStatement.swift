import CSQLite

/// A prepared statement: bind parameters (numbered from 1), step through rows, reset and
/// reuse. Keeps its database alive. Not thread-safe.
final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase
    let sql: String

    init(statement: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.statement = statement
        self.database = database
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(statement)
    }

    /// Makes SQLite copy bound text and blobs, so Swift's buffers need not outlive the call.
    private static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    }

    func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(statement, index, value))
    }

    func bind(_ value: Double, at index: Int32) throws {
        try check(sqlite3_bind_double(statement, index, value))
    }

    func bind(_ value: String, at index: Int32) throws {
        try check(sqlite3_bind_text(statement, index, value, -1, Self.transient))
    }

    /// Binds UTF-8 bytes as TEXT (the bytes are not checked to be valid UTF-8).
    func bindText(utf8 bytes: [UInt8], at index: Int32) throws {
        try check(bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return sqlite3_bind_text(statement, index, "", 0, Self.transient) }
            return sqlite3_bind_text(statement, index, base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), Self.transient)
        })
    }

    func bind(_ bytes: [UInt8], at index: Int32) throws {
        try check(bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return sqlite3_bind_zeroblob(statement, index, 0) }
            return sqlite3_bind_blob(statement, index, base, Int32(buffer.count), Self.transient)
        })
    }

    /// Binds UTF-8 bytes as TEXT without copying them (`SQLITE_STATIC`): the bytes must stay
    /// valid and unchanged until the statement has been stepped for this binding, i.e. call
    /// `step()` inside the scope that owns them.
    func bindStaticText(utf8 bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        guard let base = bytes.baseAddress else { return try check(sqlite3_bind_text(statement, index, "", 0, Self.transient)) }
        // SQLITE_STATIC is the null destructor.
        try check(sqlite3_bind_text(statement, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil))
    }

    func bindNull(at index: Int32) throws {
        try check(sqlite3_bind_null(statement, index))
    }

    /// Advances to the next row: true when there is one, false when the statement is done.
    @discardableResult
    func step() throws -> Bool {
        let code = sqlite3_step(statement)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(code: code, message: database.lastErrorMessage, sql: sql)
        }
    }

    /// Makes the statement ready to run again; bindings are kept unless `clearBindings`.
    func reset(clearBindings: Bool = false) throws {
        try check(sqlite3_reset(statement))
        if clearBindings { try check(sqlite3_clear_bindings(statement)) }
    }

    // Columns of the current row, numbered from 0.

    func int64(at column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func double(at column: Int32) -> Double { sqlite3_column_double(statement, column) }

    func text(at column: Int32) -> String? {
        sqlite3_column_text(statement, column).map { String(cString: $0) }
    }

    /// A TEXT column's UTF-8 bytes, without copying them: valid only until the next
    /// `step`, `reset`, or read of the same column as another type.
    func textBytes(at column: Int32) -> UnsafeRawBufferPointer {
        // The pointer first, then the size (as SQLite's documentation advises).
        guard let text = sqlite3_column_text(statement, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column)))
    }

    func blob(at column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let base = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw SQLiteError(code: code, message: database.lastErrorMessage, sql: sql) }
    }
}
