@_spi(Engine) import Strata
import Foundation

/// The reference workload in a `RawRecordStore`: persons are the records of entity 1,
/// keyed by their id (1...count), in `PersonEncoding`'s form.
extension RawRecordStore {
    /// The entity the persons are stored as.
    static let personEntity: UInt32 = 1

    /// Creates a store at `path` holding persons 1...count, written in one transaction with
    /// `durability`, then closes it.
    static func createWithPersons(at path: String, count: Int, durability: PageStore.Durability = .relaxed) throws {
        let store = try RawRecordStore.open(at: path)
        try store.write(durability: durability) { try $0.insertPersons(count: count) }
        try store.close()
    }
}

extension RawRecordStore.Transaction {
    /// Inserts persons 1...count, generating and encoding each one as it goes. The ids come
    /// from `allocateID`; throws when they are not 1, 2, 3, … (the store was not new).
    func insertPersons(count: Int) throws {
        let entity = RawRecordStore.personEntity
        var person = Person()
        for expected in 1...UInt64(count) {
            let id = allocateID(entity: entity)
            guard id == expected else {
                throw BenchmarkError.setupFailed("the store handed out person id \(id) where \(expected) was expected")
            }
            person.generate(id: id)
            try insert(entity: entity, id: id, bytes: PersonEncoding.encode(person))
        }
    }
}

extension RawRecordStore.Snapshot {
    /// Checks the count and `PersonVerification`'s sample; returns the sample's checksum.
    func verifyPersons(count: Int) throws -> PersonChecksum {
        try PersonVerification.checkCount(self.count(entity: RawRecordStore.personEntity), expected: count, store: "Strata")
        var expected = Person()
        var checksum = PersonChecksum()
        for id in PersonVerification.sampleIDs(recordCount: count) {
            expected.generate(id: id)
            let bytes = try get(entity: RawRecordStore.personEntity, id: id)
            let actual = try bytes.map { bytes in
                guard let person = bytes.withUnsafeBytes(PersonEncoding.decodePerson) else {
                    throw BenchmarkError.verificationFailed("Strata: person \(id) is not a valid encoding (\(bytes.count) bytes)")
                }
                return person
            }
            try PersonVerification.checkRecord(actual, equals: expected, id: id, store: "Strata")
            checksum.add(expected)
        }
        return checksum
    }

    /// Reads and decodes persons `ids` one `get` at a time; returns their checksum. Throws
    /// when one is missing or not a valid encoding.
    func checksumPersons(ids: [UInt64]) throws -> PersonChecksum {
        var checksum = PersonChecksum()
        for id in ids {
            guard let bytes = try get(entity: RawRecordStore.personEntity, id: id) else {
                throw BenchmarkError.verificationFailed("Strata: person \(id) is missing")
            }
            try bytes.withUnsafeBytes { raw in
                guard let fields = PersonEncoding.decode(raw) else {
                    throw BenchmarkError.verificationFailed("Strata: person \(id) is not a valid encoding")
                }
                checksum.add(fullName: UnsafeRawBufferPointer(rebasing: raw[fields.fullName]), createdAt: fields.createdAt,
                             note: UnsafeRawBufferPointer(rebasing: raw[fields.note]))
            }
        }
        return checksum
    }

    /// Scans every person, decoding each one's note; returns how many notes start with `prefix`.
    func countPersons(notePrefix prefix: [UInt8]) throws -> Int {
        precondition(!prefix.isEmpty, "an empty prefix matches every note")
        var matches = 0
        try prefix.withUnsafeBytes { prefix in
            try scan(entity: RawRecordStore.personEntity) { id, raw in
                guard let fields = PersonEncoding.decode(raw) else {
                    throw BenchmarkError.verificationFailed("Strata: person \(id) is not a valid encoding")
                }
                if fields.note.count >= prefix.count,
                   memcmp(raw.baseAddress! + fields.note.lowerBound, prefix.baseAddress!, prefix.count) == 0 {
                    matches += 1
                }
                return true
            }
        }
        return matches
    }
}
