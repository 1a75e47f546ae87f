/// Reads of a key-value peer's persons (id → the person in `PersonEncoding`'s form), in one
/// read transaction or snapshot: what `EncodedPersonStore` needs of LMDB and RocksDB.
protocol EncodedPersonReader {
    /// Calls `body` with the bytes stored under `id` (valid only during the call) and
    /// returns what it returns; nil when there are none.
    func withValue<T>(_ id: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T?
    /// Calls `body` with every id and its bytes, in id order.
    func forEach(_ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws
    /// How many records there are.
    func count() throws -> Int
}

/// A key-value peer holding the persons as LMDB and RocksDB do: id (8 big-endian bytes) →
/// the person in `PersonEncoding`'s form, the bytes Strata's engine stores. The workloads'
/// reads, scans and checks are written once here, on top of the engine's `read` and `put`.
protocol EncodedPersonStore: PersonPeerStore {
    associatedtype Reader: EncodedPersonReader
    /// The engine's name in error messages.
    var engineName: String { get }
    /// Runs `body` in one read transaction (one snapshot).
    func read<T>(_ body: (Reader) throws -> T) throws -> T
    /// Writes `bytes` under `id` in the open write transaction.
    func put(_ id: UInt64, _ bytes: UnsafeRawBufferPointer) throws
}

extension EncodedPersonStore {
    func insertPersons(count: Int, values: PersonValues) throws {
        var person = Person()
        for id in 1...UInt64(count) {
            person.generate(id: id)
            let bytes = switch values {
            case .bytes: PersonEncoding.encode(person)
            case .records: PersonEncoding.encode(PersonRecord(person).person)
            }
            try bytes.withUnsafeBytes { try put(id, $0) }
        }
    }

    func verifyPersons(count: Int) throws -> PersonChecksum {
        try read { reader in
            try PersonVerification.checkCount(try reader.count(), expected: count, store: engineName)
            var expected = Person()
            var checksum = PersonChecksum()
            for id in PersonVerification.sampleIDs(recordCount: count) {
                expected.generate(id: id)
                let actual = try reader.withValue(id) { bytes in
                    guard let person = PersonEncoding.decodePerson(bytes) else {
                        throw BenchmarkError.verificationFailed("\(engineName): person \(id) is not a valid encoding (\(bytes.count) bytes)")
                    }
                    return person
                }
                try PersonVerification.checkRecord(actual, equals: expected, id: id, store: engineName)
                checksum.add(expected)
            }
            return checksum
        }
    }

    func checksumPersons(ids: [UInt64], values: PersonValues) throws -> PersonChecksum {
        try read { reader in
            var checksum = PersonChecksum()
            for id in ids {
                let found = try reader.withValue(id) { bytes in try checksum.add(encoded: bytes, id: id, as: values, store: engineName) }
                guard found != nil else { throw BenchmarkError.verificationFailed("\(engineName): person \(id) is missing") }
            }
            return checksum
        }
    }

    func selectPersons(notePrefix prefix: String, values: PersonValues) throws -> PersonReadAnswer {
        try read { reader in
            var answer = PersonReadAnswer(count: 0, checksum: PersonChecksum(), ids: [])
            let filter = PersonNoteFilter(prefix: prefix, store: engineName)
            try reader.forEach { id, bytes in
                guard try filter.matches(bytes, id: id) else { return }
                answer.count += 1
                answer.ids?.append(id)
                try answer.checksum.add(encoded: bytes, id: id, as: values, store: engineName)
            }
            return answer
        }
    }

    func countPersons(notePrefix prefix: String) throws -> Int {
        try read { reader in
            var matches = 0
            let filter = PersonNoteFilter(prefix: prefix, store: engineName)
            try reader.forEach { id, bytes in if try filter.matches(bytes, id: id) { matches += 1 } }
            return matches
        }
    }
}
