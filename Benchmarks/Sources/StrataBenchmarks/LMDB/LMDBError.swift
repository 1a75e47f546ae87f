import CLMDB

/// A failed LMDB call: the return code, LMDB's message for it, and what was being done.
struct LMDBError: Error, CustomStringConvertible {
    var code: Int32
    var operation: String

    var description: String {
        "LMDB error \(code) (\(String(cString: mdb_strerror(code)))) in \(operation)"
    }

    /// Throws unless `code` is `MDB_SUCCESS`.
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws {
        guard code == MDB_SUCCESS else { throw LMDBError(code: code, operation: operation()) }
    }
}
