import Foundation

/// The persons in SQLite (`PersonTable` in `person.db` of a folder) as a `PersonPeerStore`.
final class SQLitePersonStore: PersonPeerStore {
    private let database: SQLiteDatabase
    private let table: PersonTable

    /// Opens (creating when missing) `person.db` in `folder`, with table `person`.
    init(folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        database = try SQLiteDatabase(path: (folder as NSString).appendingPathComponent("person.db"))
        table = PersonTable(database: database)
        try database.execute(PersonTable.createSQL.replacingOccurrences(of: "CREATE TABLE", with: "CREATE TABLE IF NOT EXISTS"))
    }

    func beginWrite() throws { try database.execute("BEGIN") }
    func insertPersons(count: Int, values: PersonValues) throws { try table.insertPersons(count: count, values: values) }
    func commitWrite() throws { try database.execute("COMMIT") }
    func close() throws { try database.close() }

    func verifyPersons(count: Int) throws -> PersonChecksum { try table.verifyPersons(count: count) }

    func checksumPersons(ids: [UInt64], values: PersonValues) throws -> PersonChecksum {
        try table.checksumPersons(ids: ids, values: values)
    }

    func selectPersons(notePrefix prefix: String, values: PersonValues) throws -> PersonReadAnswer {
        try table.selectPersons(notePrefix: prefix, values: values)
    }

    func countPersons(notePrefix prefix: String) throws -> Int { try table.countPersons(notePrefix: prefix) }
}
