/// The persons in RocksDB as a `PersonPeerStore`: id → the person in `PersonEncoding`'s form
/// (the same bytes Strata's engine stores). A write transaction is one `WriteBatch`.
final class RocksDBPersonStore: PersonPeerStore {
    private let database: RocksDBDatabase
    private var batch: RocksDBWriteBatch?

    /// Opens (creating when missing) the database in `folder`, with Strata's cache budget.
    init(folder: String) throws {
        database = try RocksDBDatabase(folder: folder, cacheBytes: PeerEngine.strataCacheBytes)
    }

    func beginWrite() throws { batch = RocksDBWriteBatch() }

    func insertPersons(count: Int, values: PersonValues) throws {
        guard let batch else { throw BenchmarkError.setupFailed("RocksDB: insertPersons outside a write transaction") }
        var person = Person()
        for id in 1...UInt64(count) {
            person.generate(id: id)
            let bytes = switch values {
            case .bytes: PersonEncoding.encode(person)
            case .records: PersonEncoding.encode(PersonRecord(person).person)
            }
            bytes.withUnsafeBytes { batch.put(id, $0) }
        }
    }

    func commitWrite() throws {
        guard let batch else { throw BenchmarkError.setupFailed("RocksDB: commit outside a write transaction") }
        self.batch = nil
        try database.write(batch)
    }

    /// Flushes the memtable to LZ4-compressed SST files (the store's final form, as Strata's
    /// is after its commit), then closes.
    func close() throws {
        batch = nil
        try database.flush()
        database.close()
    }

    func verifyPersons(count: Int) throws -> PersonChecksum {
        try database.read { reader in
            var stored = 0
            try reader.forEach { _, _ in stored += 1 }
            try PersonVerification.checkCount(stored, expected: count, store: "RocksDB")
            var expected = Person()
            var checksum = PersonChecksum()
            for id in PersonVerification.sampleIDs(recordCount: count) {
                expected.generate(id: id)
                let actual = try reader.withValue(id) { bytes in
                    guard let person = PersonEncoding.decodePerson(bytes) else {
                        throw BenchmarkError.verificationFailed("RocksDB: person \(id) is not a valid encoding (\(bytes.count) bytes)")
                    }
                    return person
                }
                try PersonVerification.checkRecord(actual, equals: expected, id: id, store: "RocksDB")
                checksum.add(expected)
            }
            return checksum
        }
    }

    func checksumPersons(ids: [UInt64], values: PersonValues) throws -> PersonChecksum {
        try database.read { reader in
            var checksum = PersonChecksum()
            for id in ids {
                let found = try reader.withValue(id) { bytes in try checksum.add(encoded: bytes, id: id, as: values, store: "RocksDB") }
                guard found != nil else { throw BenchmarkError.verificationFailed("RocksDB: person \(id) is missing") }
            }
            return checksum
        }
    }

    func selectPersons(notePrefix prefix: String, values: PersonValues) throws -> PersonReadAnswer {
        try database.read { reader in
            var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
            let filter = PersonNoteFilter(prefix: prefix, store: "RocksDB")
            try reader.forEach { id, bytes in
                guard try filter.matches(bytes, id: id) else { return }
                answer.count += 1
                answer.ids?.append(id)
                try answer.checksum.add(encoded: bytes, id: id, as: values, store: "RocksDB")
            }
            return answer
        }
    }

    func countPersons(notePrefix prefix: String) throws -> Int {
        try database.read { reader in
            var matches = 0
            let filter = PersonNoteFilter(prefix: prefix, store: "RocksDB")
            try reader.forEach { id, bytes in if try filter.matches(bytes, id: id) { matches += 1 } }
            return matches
        }
    }
}
