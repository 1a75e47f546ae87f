import Foundation
import Strata

/// The brief's reference record as an app declares it for Strata's public record API
/// (`Store`, `Context`, `FetchDescriptor`): a `Codable` struct whose entity is "Person".
/// (Named `PersonRecord` because `Person` is the generator's byte-level form.)
///
/// Its values are those of `Person` number N: the texts decoded from the generated UTF-8
/// bytes, `createdAt` the generated seconds since 1970 as a `Date` (which comes back bit for
/// bit: the values are whole milliseconds below 2^31 s, so converting to and from Date's
/// reference date is exact).
///
/// It codes itself by hand (`encode(to: RecordWriter)`, `init(from: RecordReader)`: the fast
/// path an app writes for a hot type, as a SQLite app binds its columns); `CodablePersonRecord`
/// is the same record relying on its `Codable` conformance, for the `-codable` workloads.
struct PersonRecord: BenchmarkPerson, Equatable {
    static var entityName: String { "Person" }

    var fullName: String
    var createdAt: Date
    var note: String

    init(fullName: String, createdAt: Date, note: String) {
        self.fullName = fullName
        self.createdAt = createdAt
        self.note = note
    }

    /// The record with a generated person's values.
    init(_ person: Person) {
        fullName = String(decoding: person.fullName, as: UTF8.self)
        createdAt = Date(timeIntervalSince1970: person.createdAt)
        note = String(decoding: person.note, as: UTF8.self)
    }

    /// The record's values in the generator's form, to compare with a generated person.
    var person: Person {
        var person = Person()
        person.fullName = Array(fullName.utf8)
        person.createdAt = createdAt.timeIntervalSince1970
        person.note = Array(note.utf8)
        return person
    }
}

extension PersonRecord {
    func encode(to writer: inout RecordWriter) throws {
        writer.encode(fullName, forKey: "fullName")
        writer.encode(createdAt, forKey: "createdAt")
        writer.encode(note, forKey: "note")
    }

    init(from reader: RecordReader) throws {
        self.init(fullName: try reader.decode(String.self, forKey: "fullName"), createdAt: try reader.decode(Date.self, forKey: "createdAt"),
                  note: try reader.decode(String.self, forKey: "note"))
    }
}

/// What the record-API workloads need of a person record type.
protocol BenchmarkPerson: PersistentRecord {
    init(_ person: Person)
    var fullName: String { get }
    var createdAt: Date { get }
    var note: String { get }
}

/// `PersonRecord` without the hand-coded fast path: Strata codes it through its synthesized
/// `Codable` conformance (the default for a record type). Same entity, same stored bytes.
struct CodablePersonRecord: BenchmarkPerson, Equatable {
    static var entityName: String { "Person" }
    var fullName: String
    var createdAt: Date
    var note: String

    init(_ person: Person) {
        fullName = String(decoding: person.fullName, as: UTF8.self)
        createdAt = Date(timeIntervalSince1970: person.createdAt)
        note = String(decoding: person.note, as: UTF8.self)
    }
}

extension PersonChecksum {
    /// Adds a record read through the public API (its texts' UTF-8 bytes, its date as
    /// seconds since 1970): the same sum as for the generated person.
    mutating func add(_ record: some BenchmarkPerson) {
        var fullName = record.fullName
        var note = record.note
        let createdAt = record.createdAt.timeIntervalSince1970
        fullName.withUTF8 { fullName in
            note.withUTF8 { note in
                add(fullName: UnsafeRawBufferPointer(fullName), createdAt: createdAt, note: UnsafeRawBufferPointer(note))
            }
        }
    }
}

/// The persons in a `Store` opened for `PersonRecord`: records 1...count, inserted in id
/// order in one transaction, so their `RecordID`s are their person numbers.
enum PersonRecordStore {
    /// The record types the store is opened for.
    static var types: [any PersistentRecord.Type] { [PersonRecord.self] }

    /// Opens (creating when missing) the store at `path` with `durability`, the history
    /// journal on (the default) or off.
    static func open(at path: String, durability: Durability = .durable, history: Bool = true) throws -> Store {
        var configuration = Store.Configuration()
        configuration.durability = durability
        configuration.history.isEnabled = history
        return try Store(at: path, for: types, configuration: configuration)
    }

    /// Creates a store at `path` holding persons 1...count, inserted in one `store.write`
    /// transaction with `durability`, then closes it.
    static func createWithPersons(at path: String, count: Int, durability: Durability = .relaxed) throws {
        let store = try open(at: path, durability: durability)
        try store.write { try $0.insertPersons(count: count) }
        try store.close()
    }
}

extension Store.WriteTransaction {
    /// Inserts persons 1...count, generating each one and making it a `PersonRecord` as it
    /// goes. Throws unless the ids handed out are 1, 2, 3, … (the store was not new).
    func insertPersons<Record: BenchmarkPerson>(count: Int, as type: Record.Type = PersonRecord.self) throws {
        var person = Person()
        for expected in 1...UInt64(count) {
            person.generate(id: expected)
            let id = try insert(Record(person))
            guard id.rawValue == expected else {
                throw BenchmarkError.setupFailed("the transaction handed out person id \(id.rawValue) where \(expected) was expected")
            }
        }
    }
}

extension Context {
    /// Checks the store through the public API as the tree workloads check theirs: the
    /// record count (`fetchCount`, when `countAll`: the store root's count, no record read),
    /// that record count+1 does not exist, and
    /// `PersonVerification`'s sample field by field. Returns the sample's checksum.
    func verifyPersons(count: Int, countAll: Bool) throws -> PersonChecksum {
        if countAll {
            try PersonVerification.checkCount(try fetchCount(FetchDescriptor<PersonRecord>()), expected: count, store: "Strata")
        }
        if let extra = try record(for: RecordID<PersonRecord>(rawValue: UInt64(count) + 1)) {
            throw BenchmarkError.verificationFailed("Strata: a person \(count + 1) exists: \(extra.person.summary)")
        }
        var expected = Person()
        var checksum = PersonChecksum()
        for id in PersonVerification.sampleIDs(recordCount: count) {
            expected.generate(id: id)
            let actual = try record(for: RecordID<PersonRecord>(rawValue: id))
            try PersonVerification.checkRecord(actual?.person, equals: expected, id: id, store: "Strata")
            checksum.add(expected)
        }
        return checksum
    }
}
