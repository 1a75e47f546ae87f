/// The benchmarks' own binary form of a `Person` as a RawRecordStore record (the engine
/// stores bytes; the typed API's encoding is not what these workloads measure):
///
///     fullNameLength:u16le fullName:utf8 createdAt:u64le (the Double's bit pattern) noteLength:u16le note:utf8
enum PersonEncoding {
    /// Where the fields of an encoded person are: byte ranges of the texts and the date.
    struct Fields {
        var fullName: Range<Int>
        var createdAt: Double
        var note: Range<Int>
    }

    /// The record's bytes.
    static func encode(_ person: Person) -> [UInt8] {
        precondition(person.fullName.count <= Int(UInt16.max) && person.note.count <= Int(UInt16.max),
                     "a text longer than a 16-bit length")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12 + person.fullName.count + person.note.count)
        appendLittleEndian(UInt16(person.fullName.count), to: &bytes)
        bytes.append(contentsOf: person.fullName)
        appendLittleEndian(person.createdAt.bitPattern, to: &bytes)
        appendLittleEndian(UInt16(person.note.count), to: &bytes)
        bytes.append(contentsOf: person.note)
        return bytes
    }

    /// The fields of an encoded person, or nil when the bytes are not one (a length runs
    /// past the end, or bytes are left over).
    static func decode(_ bytes: UnsafeRawBufferPointer) -> Fields? {
        guard bytes.count >= 2 else { return nil }
        let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt16.self)))
        let dateOffset = 2 + nameLength
        guard bytes.count >= dateOffset + 10 else { return nil }
        let createdAt = Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: dateOffset, as: UInt64.self)))
        let noteLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: dateOffset + 8, as: UInt16.self)))
        let noteOffset = dateOffset + 10
        guard bytes.count == noteOffset + noteLength else { return nil }
        return Fields(fullName: 2..<dateOffset, createdAt: createdAt, note: noteOffset..<noteOffset + noteLength)
    }

    /// The person the bytes hold; nil when they are not one.
    static func decodePerson(_ bytes: UnsafeRawBufferPointer) -> Person? {
        guard let fields = decode(bytes) else { return nil }
        var person = Person()
        person.fullName = Array(bytes[fields.fullName])
        person.createdAt = fields.createdAt
        person.note = Array(bytes[fields.note])
        return person
    }

    private static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
