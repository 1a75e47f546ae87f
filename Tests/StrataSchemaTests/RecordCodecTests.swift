#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataFormat
import StrataTestSupport

@Suite struct RecordCodecTests {
    static let uuid = UUID(uuid: (0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF))

    /// One value of every kind, with edge cases, under ids that need 1 to 5 varint bytes.
    static let everyKind: [UInt32: Value] = [
        1: .bool(false), 2: .bool(true),
        3: .int(0), 4: .int(-1), 5: .int(1), 6: .int(.min), 7: .int(.max),
        8: .double(0), 9: .double(-0.0), 10: .double(.nan), 11: .double(.infinity), 12: .double(Double(bitPattern: 0x7FF0_0000_0000_0001)),
        13: .string(""), 14: .string("Ada Lovelace"), 15: .string("👩‍👩‍👧 e\u{301} שלום عربي"),
        16: .data([]), 17: .data([0, 255, 128]),
        18: .date(Date(timeIntervalSinceReferenceDate: 0)), 19: .date(Date(timeIntervalSinceReferenceDate: -1.25e9)),
        20: .date(Date(timeIntervalSinceReferenceDate: 746_000_000.123_456_7)),
        21: .uuid(uuid), 22: .codable([]), 23: .codable(Array("{\"a\":[1,2]}".utf8)),
        30: .references([1]), 31: .references([300, 2, UInt64.max, 128]),
        127: .int(127), 128: .int(128), 16_383: .string("x"), 16_384: .bool(true), 2_097_152: .int(-64), UInt32.max: .int(64),
    ]

    @Test func roundTripsEveryKindBitForBit() throws {
        let bytes = RecordCodec.encode(Self.everyKind)
        let decoded = try RecordCodec.decode(bytes)
        #expect(decoded == Self.everyKind)
        // Bit patterns survive (== on Value is bitwise for doubles and dates).
        if case .double(let nan) = decoded[12] { #expect(nan.bitPattern == 0x7FF0_0000_0000_0001) } else { Issue.record("id 12") }
        // Non-ASCII strings keep their exact scalars (not just canonical equivalence).
        if case .string(let text) = decoded[15] { #expect(Array(text.unicodeScalars) == Array("👩‍👩‍👧 e\u{301} שלום عربي".unicodeScalars)) }
        #expect(RecordCodec.encode(decoded) == bytes)
    }

    /// FileFormat.md, "A record with relationships": format 2 only when a field holds references.
    @Test func recordsWithReferencesAreFormat2AsInTheWorkedExample() throws {
        let values: [UInt32: Value] = [1: .string("Rex"), 4: .references([3]), 5: .references([9, 200])]
        let bytes = RecordCodec.encode(values)
        #expect(bytes == [0x02, 0x03, 0x01, 0x05, 0x03, 0x52, 0x65, 0x78, 0x04, 0x0A, 0x01, 0x03, 0x05, 0x0A, 0x02, 0x09, 0xC8, 0x01])
        #expect(try RecordCodec.decode(bytes) == values)
        #expect(try RecordCodec.value(of: 5, in: bytes) == .references([9, 200]))
        #expect(RecordCodec.encode([1: .string("Rex")]).first == 1)
    }

    @Test func nullsAreOmittedAndFieldsSortedByID() throws {
        let bytes = RecordCodec.encode([9: .int(1), 2: .null, 4: .bool(true)])
        #expect(bytes == [1, 2, 4, 2, 9, 3, 2])  // format 1, 2 fields: id 4 true; id 9 int zigzag(1) = 2
        #expect(try RecordCodec.decode(bytes) == [4: .bool(true), 9: .int(1)])
        #expect(RecordCodec.encode([:]) == [1, 0])
        #expect(RecordCodec.encode([3: .null]) == [1, 0])
    }

    /// A null field (an optional attribute with a default set to nil) is tag 0 in a record of
    /// format 3, whatever else it holds; decoding gives it back as `.null`, told apart from an
    /// absent attribute by `storedValue(of:in:)`.
    @Test func nullFieldsAreFormat3AndRoundTrip() throws {
        let bytes = RecordCodec.encode([9: .int(1), 2: .null, 4: .bool(true)], keepingNullFields: true)
        #expect(bytes == [3, 3, 2, 0, 4, 2, 9, 3, 2])  // format 3, 3 fields: id 2 null; id 4 true; id 9 int 1
        #expect(try RecordCodec.decode(bytes) == [2: .null, 4: .bool(true), 9: .int(1)])
        #expect(try RecordCodec.storedValue(of: 2, in: bytes) == .null)
        #expect(try RecordCodec.storedValue(of: 3, in: bytes) == nil)
        #expect(try RecordCodec.storedValue(of: 9, in: bytes) == .int(1))
        #expect(try RecordCodec.value(of: 2, in: bytes) == .null)
        let withReferences = RecordCodec.encode([1: .null, 5: .references([7, 3])], keepingNullFields: true)
        #expect(withReferences == [3, 2, 1, 0, 5, 10, 2, 7, 3])
        #expect(try RecordCodec.decode(withReferences) == [1: .null, 5: .references([7, 3])])
        // Without nulls kept, the same values are the format-1 record of the others.
        #expect(RecordCodec.encode([9: .int(1), 2: .null, 4: .bool(true)]) == [1, 2, 4, 2, 9, 3, 2])
        #expect(RecordCodec.encode(fields: [(2, .null), (4, .bool(true))]) == [1, 1, 4, 2])
    }

    /// The worked example of Docs/FileFormat.md: a Person record.
    @Test func theWorkedExampleIsPinned() {
        let record: [UInt32: Value] = [
            1: .string("Lovelace, Ada"),
            2: .date(Date(timeIntervalSinceReferenceDate: 0.5)),
            3: .null,
        ]
        #expect(hex(RecordCodec.encode(record)) == PinnedBytes.personRecord)
    }

    @Test func largeValuesRoundTrip() throws {
        let seed = SeededRandom.seed(default: 0xB16)
        print("RecordCodecTests.largeValuesRoundTrip seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let big = random.bytes(1 << 20 | 7)
        let text = String(repeating: "é🙂", count: 300_000)
        let bytes = RecordCodec.encode([1: .data(big), 2: .string(text), 3: .int(5)])
        let decoded = try RecordCodec.decode(bytes)
        #expect(decoded[1] == .data(big) && decoded[2] == .string(text) && decoded[3] == .int(5))
        #expect(try RecordCodec.value(of: 3, in: bytes) == .int(5))
    }

    @Test func lookupFindsEachAttributeWithoutDecodingTheRest() throws {
        let bytes = RecordCodec.encode(Self.everyKind)
        for (id, value) in Self.everyKind { #expect(try RecordCodec.value(of: id, in: bytes) == value, "id \(id)") }
        for absent: UInt32 in [0, 24, 126, 129, 3_000_000, UInt32.max - 1] {
            #expect(try RecordCodec.value(of: absent, in: bytes) == .null, "id \(absent)")
        }
        // The lookup stops at the first larger id: damage after it is not looked at.
        var damaged = RecordCodec.encode([1: .int(1), 5: .string("abc")])
        damaged[damaged.count - 1] = 0xFF  // invalid UTF-8 in field 5
        #expect(try RecordCodec.value(of: 1, in: damaged) == .int(1))
        #expect(throws: FormatError.self) { try RecordCodec.value(of: 5, in: damaged) }
        #expect(throws: FormatError.self) { try RecordCodec.decode(damaged) }
    }

    @Test func malformedRecordsAreErrorsWithOffsets() {
        func error(_ bytes: [UInt8]) -> FormatError? {
            do { _ = try RecordCodec.decode(bytes); return nil } catch { return error }
        }
        #expect(error([])?.offset == 0)
        #expect(error([0, 0])?.reason == "record format byte 0 is invalid")
        #expect(error([4, 0])?.unsupportedVersion == 4)
        #expect(error([3, 0])?.reason == "a record of format 3 holds no null field; it must be written in format 1")
        #expect(error([3, 1, 5, 3, 2])?.reason == "a record of format 3 holds no null field; it must be written in format 1")
        #expect(error([3, 1, 5, 10, 1, 7])?.reason == "a record of format 3 holds no null field; it must be written in format 2")
        #expect(error([2, 1, 5, 0])?.reason == "attribute 5 stores a null tag in a record of format 2; null fields need format 3")
        #expect(error([2, 0])?.reason == "a record of format 2 holds no references; it must be written in format 1")
        #expect(error([2, 1, 5, 3, 2])?.reason.contains("format 2 holds no references") == true)
        #expect(error([2, 1, 5, 10, 0])?.reason == "value of attribute 5: an empty list of references is stored as absent")
        #expect(error([2, 1, 5, 10, 1, 0])?.reason == "value of attribute 5: record id 0 is invalid")
        #expect(error([2, 1, 5, 10, 2, 7, 7])?.reason == "value of attribute 5: record id 7 is listed twice")
        #expect(error([2, 1, 5, 10, 2, 7])?.offset == 6)  // the second id is missing
        #expect(error([2, 1, 5, 10, 4, 7])?.reason.contains("exceeds") == true)  // 4 ids cannot fit in 1 byte
        #expect(error([1, 3, 1, 1])?.offset == 1)  // 3 fields cannot fit in 2 bytes
        #expect(error([1, 2, 5, 1, 5, 2])?.offset == 4)  // id 5 twice
        #expect(error([1, 2, 5, 1, 4, 2])?.reason == "attribute id 4 follows 5: ids must strictly increase")
        #expect(error([1, 1, 5, 0])?.reason == "attribute 5 stores a null tag in a record of format 1; null fields need format 3")
        #expect(error([3, 1, 5, 0, 9])?.reason == "1 bytes after the last field of the record")  // a null field has no payload
        #expect(error([1, 1, 5, 10])?.reason == "unknown value tag 10 for attribute 5")
        #expect(error([1, 1, 5, 5, 2, 0xC3, 0x28])?.reason == "value of attribute 5 is not valid UTF-8")
        #expect(error([1, 1, 5, 3, 0x80, 0x00])?.reason.contains("shortest form") == true)  // overlong varint
        #expect(error([1, 1, 5, 3] + [UInt8](repeating: 0xFF, count: 9) + [0x02])?.reason.contains("overflows") == true)
        #expect(error([1, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 1])?.reason.contains("exceeds") == true)  // id 2^32
        #expect(error([1, 1, 5, 6, 0x85, 0x80, 0x80, 0x80, 0x01])?.reason.contains("exceeds") == true)  // length beyond the bytes
        #expect(error([1, 0, 0])?.reason == "1 bytes after the last field of the record")
    }

    @Test func everyTruncationIsAnError() {
        let bytes = RecordCodec.encode(Self.everyKind)
        for length in 0..<bytes.count {
            #expect(throws: FormatError.self, "length \(length)") { try RecordCodec.decode(Array(bytes[..<length])) }
        }
    }

    /// 10,000 random and mutated records: decoding and lookups never trap; an accepted record
    /// is canonical, and every lookup agrees with the full decode.
    @Test func fuzzedInputsNeverTrap() {
        let seed = SeededRandom.seed(default: 0x5EC0)
        print("RecordCodecTests.fuzzedInputsNeverTrap seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let good = RecordCodec.encode(Self.everyKind)
        var accepted = 0
        for round in 0..<10_000 {
            let input = Mutator.mutate(round % 2 == 0 ? good : Array(good.prefix(40)), round: round, using: &random)
            let decoded = try? RecordCodec.decode(input)
            if let decoded {
                accepted += 1
                #expect(RecordCodec.encode(decoded) == input, "round \(round), seed \(seed)")
            }
            for id: UInt32 in [1, 14, UInt32(random.next() % 200), UInt32.max] {
                let found = try? RecordCodec.value(of: id, in: input)
                if let decoded { #expect(found == (decoded[id] ?? .null), "round \(round), id \(id), seed \(seed)") }
            }
        }
        print("RecordCodecTests.fuzzedInputsNeverTrap accepted \(accepted) of 10000")
    }
}

/// Pinned encodings (worked examples of Docs/FileFormat.md). Never regenerate: a change
/// here is a format change.
enum PinnedBytes {
    /// format 1, 2 fields; id 1 string "Lovelace, Ada"; id 2 date 0.5 s after 2001-01-01.
    static let personRecord = "01" + "02" + "01" + "05" + "0d" + "4c6f76656c6163652c20416461" + "02" + "07" + "000000000000e03f"
    /// Header, then version 1 (1.0.0, checksum, entity Person with three attributes).
    static let personCatalog = [
        "5354524154534348", "0100", "0000", "02000000", "02000000", "04000000", "01000000",  // header
        "01000000", "01000000", "00000000", "00000000",  // version id 1, schema version 1.0.0
        PinnedChecksums.person, "01000000",  // checksum, 1 entity
        "01000000", "00000000", "00", "06", "506572736f6e", "03000000",  // entity 1 "Person", no parent, 3 attributes
        "01000000", "08", "66756c6c4e616d65", "04", "04", "00",  // 1 fullName: string, indexed, no default
        "02000000", "09", "637265617465644174", "06", "00", "00",  // 2 createdAt: date
        "03000000", "04", "6e6f7465", "04", "01", "00",  // 3 note: string, optional
        "00000000",  // no relationships
    ].joined()
}
