/// The persons in LMDB as a `PersonPeerStore`: id → the person in `PersonEncoding`'s form
/// (the same bytes Strata's engine stores), read in place from the memory map.
final class LMDBPersonStore: PersonPeerStore {
    private let environment: LMDBEnvironment
    private var writer: LMDBTransaction?

    /// Opens (creating when missing) the environment in `folder`.
    init(folder: String) throws {
        environment = try LMDBEnvironment(folder: folder)
    }

    func beginWrite() throws { writer = try environment.beginWrite() }

    func insertPersons(count: Int, values: PersonValues) throws {
        guard let writer else { throw BenchmarkError.setupFailed("LMDB: insertPersons outside a write transaction") }
        var person = Person()
        for id in 1...UInt64(count) {
            person.generate(id: id)
            let bytes = switch values {
            case .bytes: PersonEncoding.encode(person)
            case .records: PersonEncoding.encode(PersonRecord(person).person)
            }
            try bytes.withUnsafeBytes { try writer.put(id, $0) }
        }
    }

    func commitWrite() throws {
        guard let writer else { throw BenchmarkError.setupFailed("LMDB: commit outside a write transaction") }
        self.writer = nil
        try writer.commit()
    }

    func close() throws {
        writer?.abort()
        writer = nil
        environment.close()
    }

    func verifyPersons(count: Int) throws -> PersonChecksum {
        try environment.read { reader in
            try PersonVerification.checkCount(try reader.count(), expected: count, store: "LMDB")
            var expected = Person()
            var checksum = PersonChecksum()
            for id in PersonVerification.sampleIDs(recordCount: count) {
                expected.generate(id: id)
                let actual = try reader.get(id).map { bytes in
                    guard let person = PersonEncoding.decodePerson(bytes) else {
                        throw BenchmarkError.verificationFailed("LMDB: person \(id) is not a valid encoding (\(bytes.count) bytes)")
                    }
                    return person
                }
                try PersonVerification.checkRecord(actual, equals: expected, id: id, store: "LMDB")
                checksum.add(expected)
            }
            return checksum
        }
    }

    func checksumPersons(ids: [UInt64], values: PersonValues) throws -> PersonChecksum {
        try environment.read { reader in
            var checksum = PersonChecksum()
            for id in ids {
                guard let bytes = try reader.get(id) else { throw BenchmarkError.verificationFailed("LMDB: person \(id) is missing") }
                try checksum.add(encoded: bytes, id: id, as: values, store: "LMDB")
            }
            return checksum
        }
    }

    func selectPersons(notePrefix prefix: String, values: PersonValues) throws -> PersonReadAnswer {
        try environment.read { reader in
            var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
            let filter = PersonNoteFilter(prefix: prefix, store: "LMDB")
            try reader.forEach { id, bytes in
                guard try filter.matches(bytes, id: id) else { return }
                answer.count += 1
                answer.ids?.append(id)
                try answer.checksum.add(encoded: bytes, id: id, as: values, store: "LMDB")
            }
            return answer
        }
    }

    func countPersons(notePrefix prefix: String) throws -> Int {
        try environment.read { reader in
            var matches = 0
            let filter = PersonNoteFilter(prefix: prefix, store: "LMDB")
            try reader.forEach { id, bytes in if try filter.matches(bytes, id: id) { matches += 1 } }
            return matches
        }
    }
}
