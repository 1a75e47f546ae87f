/// A failed RocksDB call: RocksDB's message and what was being done.
struct RocksDBError: Error, CustomStringConvertible {
    var message: String
    var operation: String

    var description: String { "RocksDB error in \(operation): \(message)" }
}
