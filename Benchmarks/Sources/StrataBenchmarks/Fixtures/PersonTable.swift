/// The reference workload in SQLite, as an app would keep it: table `person` whose INTEGER
/// PRIMARY KEY (the rowid) is the person's id — the same ids as Strata's records —
/// `fullName` and `note` as TEXT and `createdAt` as REAL, no other index. Each method
/// prepares its statement once and runs it for every record.
struct PersonTable {
    let database: SQLiteDatabase

    static let createSQL = """
        CREATE TABLE person(id INTEGER PRIMARY KEY, fullName TEXT NOT NULL, createdAt REAL NOT NULL, note TEXT NOT NULL)
        """

    /// Creates the table.
    func create() throws {
        try database.execute(Self.createSQL)
    }

    /// Creates a database at `path` holding persons 1...count, inserted in one transaction,
    /// then closes it.
    static func createWithPersons(at path: String, count: Int) throws {
        let database = try SQLiteDatabase(path: path)
        let table = PersonTable(database: database)
        try table.create()
        try database.transaction { try table.insertPersons(count: count) }
        try database.close()
    }

    /// Inserts persons 1...count with one prepared INSERT, generating each one as it goes
    /// and binding its id and three columns (texts without a copy). With `.records`, each
    /// person is made a `PersonRecord` first and its Strings are bound, as an app does. Run
    /// it inside a transaction.
    func insertPersons(count: Int, values: PersonValues = .bytes) throws {
        let insert = try database.prepare("INSERT INTO person(id, fullName, createdAt, note) VALUES (?, ?, ?, ?)")
        var person = Person()
        for id in 1...UInt64(count) {
            person.generate(id: id)
            try insert.bind(Int64(id), at: 1)
            switch values {
            case .bytes:
                try insert.bind(person.createdAt, at: 3)
                try person.fullName.withUnsafeBytes { fullName in
                    try person.note.withUnsafeBytes { note in try insert.stepBinding(fullName: fullName, note: note) }
                }
            case .records:
                let record = PersonRecord(person)
                var fullName = record.fullName, note = record.note
                try insert.bind(record.createdAt.timeIntervalSince1970, at: 3)
                try fullName.withUTF8 { fullName in
                    try note.withUTF8 { note in
                        try insert.stepBinding(fullName: UnsafeRawBufferPointer(fullName), note: UnsafeRawBufferPointer(note))
                    }
                }
            }
            try insert.reset()
        }
    }

    /// Checks the count and `PersonVerification`'s sample; returns the sample's checksum.
    func verifyPersons(count: Int) throws -> PersonChecksum {
        let countQuery = try database.prepare("SELECT count(*) FROM person")
        guard try countQuery.step() else { throw BenchmarkError.verificationFailed("SQLite: SELECT count(*) returned no row") }
        try PersonVerification.checkCount(Int(countQuery.int64(at: 0)), expected: count, store: "SQLite")

        let select = try database.prepare("SELECT fullName, createdAt, note FROM person WHERE id = ?")
        var expected = Person()
        var checksum = PersonChecksum()
        for id in PersonVerification.sampleIDs(recordCount: count) {
            expected.generate(id: id)
            try select.bind(Int64(id), at: 1)
            var actual: Person?
            if try select.step() {
                var person = Person()
                person.fullName = Array(select.textBytes(at: 0))
                person.createdAt = select.double(at: 1)
                person.note = Array(select.textBytes(at: 2))
                actual = person
            }
            try select.reset()
            try PersonVerification.checkRecord(actual, equals: expected, id: id, store: "SQLite")
            checksum.add(expected)
        }
        return checksum
    }

    /// Reads persons `ids` one prepared `SELECT … WHERE id = ?` at a time, in one read
    /// transaction; returns their checksum, computed from the column bytes in place
    /// (`.bytes`) or from a `PersonRecord` made of each row (`.records`). Throws when one is
    /// missing.
    func checksumPersons(ids: [UInt64], values: PersonValues = .bytes) throws -> PersonChecksum {
        let select = try database.prepare("SELECT fullName, createdAt, note FROM person WHERE id = ?")
        return try database.transaction {
            var checksum = PersonChecksum()
            for id in ids {
                try select.bind(Int64(id), at: 1)
                guard try select.step() else { throw BenchmarkError.verificationFailed("SQLite: person \(id) is missing") }
                checksum.add(fullName: select.textBytes(at: 0), createdAt: select.double(at: 1), note: select.textBytes(at: 2), as: values)
                try select.reset()
            }
            return checksum
        }
    }

    /// `SELECT count(*) FROM person`.
    func countPersons() throws -> Int {
        let query = try database.prepare("SELECT count(*) FROM person")
        guard try query.step() else { throw BenchmarkError.verificationFailed("SQLite: SELECT count(*) returned no row") }
        return Int(query.int64(at: 0))
    }

    /// `SELECT count(*) … WHERE note GLOB 'prefix*'`: a full scan of the table. GLOB, not
    /// LIKE: case-sensitive, as Strata's `starts(with:)`.
    func countPersons(notePrefix prefix: String) throws -> Int {
        let query = try database.prepare("SELECT count(*) FROM person WHERE note GLOB ?")
        try query.bind(try Self.globPattern(prefix), at: 1)
        guard try query.step() else { throw BenchmarkError.verificationFailed("SQLite: SELECT count(*) returned no row") }
        return Int(query.int64(at: 0))
    }

    /// `SELECT id, fullName, createdAt, note … WHERE note GLOB 'prefix*'` (a full scan of the
    /// table) in one read transaction, reading every row returned: their ids, in the order
    /// returned, and the checksum of their values (as `checksumPersons` computes it).
    func selectPersons(notePrefix prefix: String, values: PersonValues = .bytes) throws -> PersonReadAnswer {
        let query = try database.prepare("SELECT id, fullName, createdAt, note FROM person WHERE note GLOB ?")
        try query.bind(try Self.globPattern(prefix), at: 1)
        return try database.transaction {
            var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
            while try query.step() {
                answer.count += 1
                answer.ids?.append(UInt64(query.int64(at: 0)))
                answer.checksum.add(fullName: query.textBytes(at: 1), createdAt: query.double(at: 2), note: query.textBytes(at: 3), as: values)
            }
            return answer
        }
    }

    /// The GLOB pattern matching texts that start with `prefix`; throws when the prefix holds
    /// GLOB's special characters.
    private static func globPattern(_ prefix: String) throws -> String {
        guard !prefix.contains(where: { "*?[]".contains($0) }) else {
            throw BenchmarkError.usage("the note prefix '\(prefix)' holds GLOB special characters")
        }
        return prefix + "*"
    }
}

extension SQLiteStatement {
    /// Binds parameters 2 (fullName) and 4 (note) without copying and steps, while the
    /// bytes are alive (`bindStaticText`).
    fileprivate func stepBinding(fullName: UnsafeRawBufferPointer, note: UnsafeRawBufferPointer) throws {
        try bindStaticText(utf8: fullName, at: 2)
        try bindStaticText(utf8: note, at: 4)
        try step()
    }
}
