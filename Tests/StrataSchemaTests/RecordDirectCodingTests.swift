import FoundationEssentials
import Testing
import StrataSchema
import StrataFormat
import StrataTestSupport

/// The direct paths between typed records and bytes (`RecordLayout`, `RecordFieldReader`,
/// `RecordFieldWriter`) agree with the general ones they replace: the same bytes, the same
/// values, the same errors.
@Suite struct RecordDirectCodingTests {
    let encoder = RecordEncoder()
    let decoder = RecordDecoder()

    static func sampleLayout() throws -> RecordLayout {
        let catalog = try SchemaCatalog().register(Schema([try Sample.entity()])).catalog
        let version = try #require(catalog.latest)
        return RecordLayout(version: version, entityID: try #require(version.entity(named: "Sample")?.id))
    }

    /// The decoder the direct reader replaced, written against `ByteReader` and `Value.read`.
    static func referenceDecode(_ bytes: [UInt8]) -> Result<[UInt32: Value], FormatError> {
        Result { () throws(FormatError) in
            try decodingFormat {
                try bytes.withUnsafeBytes { buffer in
                    var reader = ByteReader(buffer)
                    let format = try reader.read(UInt8.self, "record format byte")
                    guard format != 0 else { throw FormatError("record format byte 0 is invalid", at: 0) }
                    guard format <= 2 else { throw FormatError("record format \(format) is newer than 2", at: 0, unsupportedVersion: UInt16(format)) }
                    let count = try reader.readVarint(atMost: reader.remaining / 2, "record field count")
                    var values: [UInt32: Value] = [:]
                    var previous: UInt32?
                    for _ in 0..<count {
                        let start = reader.position
                        let raw = try reader.readVarint("attribute id")
                        guard let id = UInt32(exactly: raw) else { throw FormatError("attribute id \(raw) exceeds the limit \(UInt32.max)", at: start) }
                        if let previous, id <= previous {
                            throw FormatError("attribute id \(id) follows \(previous): ids must strictly increase", at: start)
                        }
                        let tagStart = reader.position
                        let rawTag = try reader.read(UInt8.self, "type tag of attribute \(id)")
                        guard let tag = ValueTag(rawValue: rawTag), tag != .null, tag != .references || format >= 2 else {
                            throw FormatError(rawTag == 0 ? "attribute \(id) stores a null tag; nulls are omitted"
                                                          : "unknown value tag \(rawTag) for attribute \(id)", at: tagStart)
                        }
                        values[id] = try Value.read(tag, from: &reader, "value of attribute \(id)")
                        previous = id
                    }
                    guard reader.remaining == 0 else {
                        throw FormatError("\(reader.remaining) bytes after the last field of the record", at: reader.position)
                    }
                    guard format == 1 || values.values.contains(where: { if case .references = $0 { true } else { false } }) else {
                        throw FormatError("a record of format 2 holds no references; it must be written in format 1", at: 0)
                    }
                    return values
                }
            }
        }
    }

    @Test func decodingAgreesWithTheReferenceOnHostileBytes() {
        let seed = SeededRandom.seed(default: 0xD1EC7)
        print("RecordDirectCodingTests.decodingAgreesWithTheReferenceOnHostileBytes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let good = RecordCodec.encode(RecordCodecTests.everyKind)
        var inputs = (0..<good.count).map { Array(good[..<$0]) }
        for round in 0..<5_000 { inputs.append(Mutator.mutate(round % 2 == 0 ? good : Array(good.prefix(40)), round: round, using: &random)) }
        for (index, input) in inputs.enumerated() {
            let direct = Result { () throws(FormatError) in try RecordCodec.decode(input) }
            switch (direct, Self.referenceDecode(input)) {
            case (.success(let a), .success(let b)): #expect(a == b, "input \(index), seed \(seed)")
            case (.failure(let a), .failure(let b)): #expect(a == b, "input \(index), seed \(seed)")
            default: Issue.record("input \(index): direct \(direct), seed \(seed)")
            }
        }
    }

    @Test func stringsOfEveryKindSurviveTheDirectReader() throws {
        for text in ["", "short", "exactly 8", String(repeating: "a", count: 100), "café", "👩‍👩‍👧 e\u{301} שלום عربي", "ascii then é"] {
            let fields = try RecordCodec.decodeFields(RecordCodec.encode([7: .string(text)]))
            guard case .string(let read)? = fields.first?.value else { Issue.record("\(text)"); continue }
            #expect(Array(read.unicodeScalars) == Array(text.unicodeScalars))
        }
    }

    @Test func encodingByLayoutGivesTheBytesOfTheDictionaryPath() throws {
        let layout = try Self.sampleLayout()
        for record in [Sample.make(), Sample.make(note: nil, title: "Ünïcode 🙂")] {
            var byID: [UInt32: Value] = [:]
            for (name, value) in try encoder.encode(record) { byID[try #require(layout.attributeIDs[name])] = value }
            let expected = RecordCodec.encode(byID)
            #expect(try encoder.encode(record, layout: layout) == expected)
            #expect(try encoder.encode(record, attributeIDs: layout.attributeIDs) == expected)
        }
    }

    /// A record whose `encode(to:)` writes the given (name, value) steps in order, repeats and
    /// nils included — the shapes a hand-written `encode(to:)` can take.
    struct Scripted: Encodable {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        var steps: [(name: String, value: Int64?)]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (name, value) in steps {
                if let value { try container.encode(value, forKey: Key(stringValue: name)) } else {
                    try container.encodeNil(forKey: Key(stringValue: name))
                }
            }
        }
    }

    /// Values written straight to bytes while they come in id order, and through the list of
    /// fields once they do not, give exactly `RecordCodec.encode` of the last value per name:
    /// any order, repeated names, nils, and more than 127 fields (a two-byte field count).
    @Test func encodingStraightToBytesMatchesTheFieldListInEveryOrder() throws {
        let seed = SeededRandom.seed(default: 0xB17E5)
        print("RecordDirectCodingTests.encodingStraightToBytesMatchesTheFieldListInEveryOrder seed: \(seed)")
        var random = SeededRandom(seed: seed)
        for round in 0..<400 {
            let attributeCount = round % 10 == 0 ? 130 + Int(random.next() % 70) : 1 + Int(random.next() % 12)
            let layout = RecordLayout(attributes: (0..<attributeCount).map { ("a\($0)", UInt32($0 * 3 + 1), .null) })
            var steps: [(name: String, value: Int64?)] = []
            let ordered = random.next() % 2 == 0
            for index in 0..<attributeCount where random.next() % 4 != 0 {
                steps.append(("a\(index)", random.next() % 5 == 0 ? nil : Int64(bitPattern: random.next()) >> Int64(random.next() % 64)))
            }
            if !ordered {
                steps.shuffle(using: &random)
                if let repeated = steps.randomElement(using: &random) {
                    steps.append((repeated.name, random.next() % 2 == 0 ? nil : 42))
                }
            }
            var last: [UInt32: Value] = [:]
            for (name, value) in steps { last[try #require(layout.attributeIDs[name])] = value.map(Value.int) ?? .null }
            let expected = RecordCodec.encode(last)
            #expect(try encoder.encode(Scripted(steps: steps), layout: layout) == expected, "round \(round), seed \(seed)")
        }
    }

    @Test func fieldsInAnyOrderEncodeCanonicallyAndTheLastValueWins() {
        let fields: [(id: UInt32, value: Value)] = [(9, .int(1)), (2, .string("a")), (9, .int(2)), (4, .bool(true)), (2, .null), (300, .double(1))]
        #expect(RecordCodec.encode(fields: fields) == RecordCodec.encode([9: .int(2), 2: .null, 4: .bool(true), 300: .double(1)]))
        #expect(RecordCodec.encode(fields: []) == [1, 0])
    }

    @Test func decodingByLayoutRoundTripsAndAppliesDefaults() throws {
        let layout = try Self.sampleLayout()
        for record in [Sample.make(), Sample.make(note: nil)] {
            let bytes = try encoder.encode(record, layout: layout)
            #expect(try decoder.decode(Sample.self, fields: try RecordCodec.decodeFields(bytes), layout: layout) == record)
        }
        // Without `count`: the catalog default (Sample's `attributeDefaults` became it).
        let countID = try #require(layout.attributeIDs["count"])
        let fields = try RecordCodec.decodeFields(try encoder.encode(Sample.make(), layout: layout)).filter { $0.id != countID }
        #expect(try decoder.decode(Sample.self, fields: fields, layout: layout).count == 0)
        // A layout without `count` at all (another version): the type's default still applies.
        let noCount = RecordLayout(attributes: layout.attributeIDs.filter { $0.key != "count" }.map { ($0.key, $0.value, .null) })
        #expect(try decoder.decode(Sample.self, fields: fields, layout: noCount).count == 0)
        // A value whose id the layout lacks is ignored; a missing non-optional one is an error.
        let flagID = try #require(layout.attributeIDs["flag"])
        #expect(throws: RecordCodingError.missingValue(attribute: "flag", type: "Bool")) {
            try decoder.decode(Sample.self, fields: fields.filter { $0.id != flagID } + [(id: UInt32.max, value: .bool(true))], layout: layout)
        }
    }

    /// Decoding bytes straight into a layout's slots (the read path) gives what decoding the
    /// fields first gives — the same record, or the same error — on good and hostile bytes.
    @Test func decodingBytesIntoSlotsAgreesWithDecodingFields() throws {
        let seed = SeededRandom.seed(default: 0x5107_5)
        print("RecordDirectCodingTests.decodingBytesIntoSlotsAgreesWithDecodingFields seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let layout = try Self.sampleLayout()
        let good = try encoder.encode(Sample.make(), layout: layout)
        var inputs = [good, try encoder.encode(Sample.make(note: nil), layout: layout)] + (0..<good.count).map { Array(good[..<$0]) }
        for round in 0..<3_000 { inputs.append(Mutator.mutate(good, round: round, using: &random)) }
        var decoded = 0
        for (index, input) in inputs.enumerated() {
            let viaFields = Result { () throws -> Sample in
                try decoder.decode(Sample.self, fields: try RecordCodec.decodeFields(input), layout: layout)
            }
            let viaSlots = Result { () throws -> Sample in
                try input.withUnsafeBytes { try decoder.decode(Sample.self, bytes: $0, layout: layout) }
            }
            switch (viaFields, viaSlots) {
            case (.success(let a), .success(let b)):
                // Compared by their encodings (a NaN field is not equal to itself; a mutated
                // date may be one that `Date.description` cannot print).
                let same = (try? encoder.encode(a, layout: layout)) == (try? encoder.encode(b, layout: layout))
                #expect(same, "input \(index), seed \(seed)")
                decoded += 1
            case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)", "input \(index), seed \(seed)")
            default: Issue.record("input \(index): only one path failed, seed \(seed)")
            }
        }
        #expect(decoded >= 2)
    }

    @Test func decodingByLayoutReportsTheErrorsOfTheNamedPath() throws {
        let layout = try Self.sampleLayout()
        let good = try RecordCodec.decodeFields(try encoder.encode(Sample.make(), layout: layout))
        func failure(_ name: String, _ value: Value) throws -> RecordCodingError? {
            let id = try #require(layout.attributeIDs[name])
            let changed = good.map { $0.id == id ? (id: id, value: value) : $0 }
            do { _ = try decoder.decode(Sample.self, fields: changed, layout: layout); return nil } catch { return error }
        }
        #expect(try failure("small", .int(300)) == .integerOutOfRange(attribute: "small", value: "300", type: "Int8"))
        #expect(try failure("unsigned", .int(-1)) == .integerOutOfRange(attribute: "unsigned", value: "-1", type: "UInt32"))
        #expect(try failure("score", .int(1)) == .typeMismatch(attribute: "score", expected: "Double", found: .int(1)))
        #expect(try failure("ratio", .string("x")) == .typeMismatch(attribute: "ratio", expected: "Float", found: .string("x")))
        #expect(try failure("title", .int(1)) == .typeMismatch(attribute: "title", expected: "String", found: .int(1)))
        #expect(try failure("createdAt", .int(1)) == .typeMismatch(attribute: "createdAt", expected: "Date", found: .int(1)))
        #expect(try failure("id", .int(1)) == .typeMismatch(attribute: "id", expected: "UUID", found: .int(1)))
        #expect(try failure("blob", .int(1)) == .typeMismatch(attribute: "blob", expected: "Data", found: .int(1)))
        #expect(try failure("note", .bool(true)) == .typeMismatch(attribute: "note", expected: "String", found: .bool(true)))
        #expect(try failure("lastSeen", .bool(true)) == .typeMismatch(attribute: "lastSeen", expected: "Date", found: .bool(true)))
    }
}
