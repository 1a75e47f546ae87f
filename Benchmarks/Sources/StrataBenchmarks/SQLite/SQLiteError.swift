import CSQLite

/// A failed SQLite call: the result code, SQLite's message, and the SQL it was running.
struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var sql: String?

    var description: String {
        "SQLite error \(code) (\(String(cString: sqlite3_errstr(code)))): \(message)" + (sql.map { " — in: \($0)" } ?? "")
    }
}
