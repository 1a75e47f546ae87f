/// What the read workloads compute from every record they read, so that neither store can
/// skip fetching or decoding it: the texts' lengths, the last byte of each text and the
/// whole seconds of `createdAt`, summed. Strata and SQLite compute it from their own decoded
/// fields, and it must equal the checksum of the records as generated.
struct PersonChecksum: Equatable {
    private(set) var value: UInt64

    /// An empty checksum, or one a process reported (`value`).
    init(value: UInt64 = 0) {
        self.value = value
    }

    /// Adds one record's fields (the texts as UTF-8 bytes).
    mutating func add(fullName: UnsafeRawBufferPointer, createdAt: Double, note: UnsafeRawBufferPointer) {
        value &+= UInt64(fullName.count) &+ UInt64(fullName.last ?? 0)
        value &+= UInt64(note.count) &+ UInt64(note.last ?? 0)
        value &+= UInt64(createdAt)
    }

    /// Adds a generated record.
    mutating func add(_ person: Person) {
        person.fullName.withUnsafeBytes { fullName in
            person.note.withUnsafeBytes { note in add(fullName: fullName, createdAt: person.createdAt, note: note) }
        }
    }

    /// The checksum of records `ids` as generated.
    static func expected(ids: [UInt64]) -> PersonChecksum {
        var checksum = PersonChecksum()
        var person = Person()
        for id in ids {
            person.generate(id: id)
            checksum.add(person)
        }
        return checksum
    }
}
