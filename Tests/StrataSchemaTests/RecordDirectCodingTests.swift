#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataFormat
import StrataTestSupport

/// The direct paths between typed records and bytes (`RecordLayout`, `RecordFieldReader`,
/// `RecordFieldWriter`) agree with the general ones and with a reader written from the spec
/// alone: the same bytes, the same values, the same errors.
@Suite struct RecordDirectCodingTests {
    let encoder = RecordEncoder()
    let decoder = RecordDecoder()

    static func sampleLayout() throws -> RecordLayout {
        let catalog = try SchemaCatalog().register(Schema([try Sample.entity()])).catalog
        let version = try #require(catalog.latest)
        return RecordLayout(version: version, entityID: try #require(version.entity(named: "Sample")?.id))
    }

    /// The record decoded by a reader written from the spec alone (`SpecRecordReader`).
    static func referenceDecode(_ bytes: [UInt8]) -> Result<[UInt32: Value], FormatError> {
        SpecRecordReader.decode(bytes)
    }

    @Test func decodingAgreesWithTheReferenceOnHostileBytes() {
        let seed = SeededRandom.seed(default: 0xD1EC7)
        print("RecordDirectCodingTests.decodingAgreesWithTheReferenceOnHostileBytes seed: \(seed)")
        for (index, input) in Self.hostileRecords(seed: seed).enumerated() {
            let direct = Result { () throws(FormatError) in try RecordCodec.decode(input) }
            switch (direct, Self.referenceDecode(input)) {
            case (.success(let a), .success(let b)): #expect(a == b, "input \(index), seed \(seed)")
            case (.failure(let a), .failure(let b)): #expect(a == b, "input \(index), seed \(seed)")
            default: Issue.record("input \(index): direct \(direct), seed \(seed)")
            }
        }
    }

    /// Hostile inputs: every prefix of a good record of every kind, and mutations of it and of
    /// the same record holding null fields (format 3).
    static func hostileRecords(seed: UInt64, rounds: Int = 5_000) -> [[UInt8]] {
        var random = SeededRandom(seed: seed)
        let good = RecordCodec.encode(RecordCodecTests.everyKind)
        let withNulls = RecordCodec.encode(RecordCodecTests.everyKind.merging([1: .null, 24: .null]) { _, null in null }, keepingNullFields: true)
        var inputs = (0..<good.count).map { Array(good[..<$0]) } + (0..<withNulls.count).map { Array(withNulls[..<$0]) }
        for round in 0..<rounds {
            let base = round % 3 == 0 ? good : round % 3 == 1 ? withNulls : Array(good.prefix(40))
            inputs.append(Mutator.mutate(base, round: round, using: &random))
        }
        return inputs
    }

    /// A field lookup walks what the spec's lookup walks: the same value or the same error,
    /// for every id of the record and for ids between and beyond them.
    @Test func lookupAgreesWithTheSpecOnHostileBytes() {
        let seed = SeededRandom.seed(default: 0x100C0B)
        print("RecordDirectCodingTests.lookupAgreesWithTheSpecOnHostileBytes seed: \(seed)")
        let ids: [UInt32] = RecordCodecTests.everyKind.keys.sorted() + [0, 24, 129, 5_000, UInt32.max - 1]
        for (index, input) in Self.hostileRecords(seed: seed, rounds: 1_500).enumerated() {
            for id in ids {
                let direct = Result { () throws(FormatError) in try RecordCodec.value(of: id, in: input) }
                switch (direct, SpecRecordReader.lookUp(id, in: input)) {
                case (.success(let a), .success(let b)): #expect(a == b, "input \(index), id \(id), seed \(seed)")
                case (.failure(let a), .failure(let b)): #expect(a == b, "input \(index), id \(id), seed \(seed)")
                default: Issue.record("input \(index), id \(id): direct \(direct), seed \(seed)")
                }
            }
        }
    }

    /// The byte-level pre-filter, which finds fields with the same reader, answers only where
    /// the field the spec finds gives that answer, on hostile bytes too.
    @Test func preFilterAnswersOnlyWhatTheSpecsFieldGives() {
        let seed = SeededRandom.seed(default: 0xF117E5)
        print("RecordDirectCodingTests.preFilterAnswersOnlyWhatTheSpecsFieldGives seed: \(seed)")
        let probes: [(UInt32, Value)] = [(3, .int(0)), (7, .int(.max)), (14, .string("Ada Lovelace")), (15, .string("x")),
                                         (9, .double(0)), (19, .date(Date(timeIntervalSinceReferenceDate: -1.25e9))), (2, .bool(true)),
                                         (16_383, .string("x")), (24, .int(1))]
        var answered = 0
        for (index, input) in Self.hostileRecords(seed: seed, rounds: 1_500).enumerated() {
            for (id, constant) in probes {
                let condition = RecordCondition.compare(attributeID: id, .equal, constant, absent: .null)
                guard let answer = input.withUnsafeBytes({ condition.evaluate($0) }) else { continue }
                answered += 1
                guard case .success(let stored) = SpecRecordReader.lookUp(id, in: input) else {
                    Issue.record("input \(index), id \(id): answered \(answer) where the spec finds no field, seed \(seed)")
                    continue
                }
                // As Swift compares the decoded values: doubles and dates by IEEE `==` (-0.0 == 0).
                let equal: Bool = switch (stored, constant) {
                case (.double(let a), .double(let b)): a == b
                case (.date(let a), .date(let b)): a.timeIntervalSinceReferenceDate == b.timeIntervalSinceReferenceDate
                default: stored == constant
                }
                #expect(answer == equal, "input \(index), id \(id): \(stored) == \(constant), seed \(seed)")
            }
        }
        #expect(answered > 1_000)
    }

    /// Values outside records (catalog defaults) are read and written by the record's reader
    /// and writer: the spec's values and errors, and the bytes a record holds.
    @Test func valuesOutsideRecordsAgreeWithTheSpec() {
        let seed = SeededRandom.seed(default: 0x7A1)
        print("RecordDirectCodingTests.valuesOutsideRecordsAgreeWithTheSpec seed: \(seed)")
        var random = SeededRandom(seed: seed)
        for value in [Value.null] + RecordCodecTests.everyKind.values {
            var writer = ByteWriter()
            writer.append(value)
            let record = RecordCodec.encode([1: value])
            if !value.isNull { #expect(Array(record.dropFirst(3)) == writer.bytes, "\(value)") }
            var inputs = (0...writer.bytes.count).map { Array(writer.bytes[..<$0]) }
            for round in 0..<200 { inputs.append(Mutator.mutate(writer.bytes, round: round, using: &random)) }
            for input in inputs {
                let direct = Result { () throws(FormatError) in
                    try decodingFormat { try input.withUnsafeBytes { buffer in
                        var reader = ByteReader(buffer)
                        return (try Value.read(from: &reader, "default"), reader.position)
                    } }
                }
                let spec = Result { () throws(FormatError) in
                    var reader = SpecRecordReader(input)
                    let tagStart = reader.position
                    let tag = try reader.byte("type tag of default")
                    guard tag <= 10 else { throw FormatError("unknown value tag \(tag) for default", at: tagStart) }
                    return (try reader.payload(tag, "default"), reader.position)
                }
                switch (direct, spec) {
                case (.success(let a), .success(let b)): #expect(a == b, "\(input), seed \(seed)")
                case (.failure(let a), .failure(let b)): #expect(a == b, "\(input), seed \(seed)")
                default: Issue.record("\(input): direct \(direct), spec \(spec), seed \(seed)")
                }
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

    /// A record whose `encode(to:)` keeps its container (so the session must not reuse the
    /// state it wrote into) and writes one attribute.
    final class ContainerKeeper: Encodable {
        nonisolated(unsafe) static var kept: [Any] = []
        let value: Int64
        init(_ value: Int64) { self.value = value }
        enum CodingKeys: String, CodingKey { case a0 }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(value, forKey: .a0)
            Self.kept.append(container)
        }
    }

    /// A session reusing its state and buffer gives, record after record, exactly the bytes
    /// and errors of a fresh encoder — in any order of keys, after a failed record, through
    /// `encode` or `encodeInPlace`, and when a record kept its container.
    @Test func encodingSessionsMatchFreshEncoders() throws {
        let seed = SeededRandom.seed(default: 0x5E55)
        print("RecordDirectCodingTests.encodingSessionsMatchFreshEncoders seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let layout = RecordLayout(attributes: (0..<12).map { ("a\($0)", UInt32($0 * 2 + 1), .null) })
        let session = RecordEncodingSession(layout: layout)
        for round in 0..<600 {
            var steps: [(name: String, value: Int64?)] = []
            for index in 0..<12 where random.next() % 3 != 0 {
                steps.append(("a\(index)", random.next() % 6 == 0 ? nil : Int64(bitPattern: random.next()) >> 3))
            }
            if random.next() % 4 == 0 { steps.shuffle(using: &random) }
            if random.next() % 25 == 0 { steps.append(("unknown", 1)) }  // an unknown attribute: an error
            let record = Scripted(steps: steps)
            let fresh = Result { () throws(RecordCodingError) in try encoder.encode(record, layout: layout) }
            let inPlace = random.next() % 2 == 0
            let reused = Result { () throws(RecordCodingError) in
                inPlace ? Array(try session.encodeInPlace(record)) : try session.encode(record)
            }
            switch (fresh, reused) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "round \(round), seed \(seed)")
            case (.failure(let a), .failure(let b)): #expect(a == b, "round \(round), seed \(seed)")
            default: Issue.record("round \(round): fresh \(fresh), session \(reused), seed \(seed)")
            }
            if round % 50 == 0 {
                // A record that keeps its container: its bytes stay its own.
                let kept = try session.encode(ContainerKeeper(Int64(round)))
                #expect(kept == RecordCodec.encode([1: .int(Int64(round))]))
            }
        }
        ContainerKeeper.kept.removeAll()
    }

    /// A type whose properties come in one fixed order that is not the ids' (a property a later
    /// version added, declared first): a session learns the order from the first record and
    /// looks names up through it. Runs of records in one order, then another, with names
    /// missing, nils and repeats now and then, give the bytes of a fresh encoder — as arrays
    /// and in place.
    @Test func sessionsLearningAFixedOrderMatchFreshEncoders() throws {
        let seed = SeededRandom.seed(default: 0x0DE5)
        print("RecordDirectCodingTests.sessionsLearningAFixedOrderMatchFreshEncoders seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let layout = RecordLayout(attributes: (0..<9).map { ("a\($0)", UInt32($0 * 5 + 2), .null) })
        let session = RecordEncodingSession(layout: layout), inPlace = RecordEncodingSession(layout: layout)
        var order = Array(0..<9)
        for round in 0..<2_000 {
            if round % 200 == 0 { order.shuffle(using: &random) }  // a new fixed order for a while
            var steps: [(name: String, value: Int64?)] = order.map { ("a\($0)", Int64(bitPattern: random.next()) >> 9) }
            switch random.next() % 20 {
            case 0: steps.remove(at: Int(random.next() % UInt64(steps.count)))  // a name left out
            case 1: steps[Int(random.next() % UInt64(steps.count))].value = nil  // a nil
            case 2: steps.append((steps[0].name, 7))  // a repeat, which wins
            case 3: steps.append((steps[1].name, nil))  // a nil after a value: erases it
            case 4: steps.insert(("a\(order[0])", 3), at: 1)  // a repeat out of place
            default: break
            }
            let record = Scripted(steps: steps)
            let expected = try encoder.encode(record, layout: layout)
            #expect(try session.encode(record) == expected, "round \(round), seed \(seed)")
            #expect(Array(try inPlace.encodeInPlace(record)) == expected, "round \(round), seed \(seed)")
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

// MARK: - Decoding typed records straight from their bytes

/// A record of every attribute kind, decoded by its synthesized `init(from:)`: the concrete
/// `decode` overloads (strings, Booleans, floating point, every integer type), the generic one
/// (dates, UUIDs, data, byte arrays, a codable value, relationships) and `decodeIfPresent` for
/// the optionals.
struct EveryKind: PersistentRecord {
    struct Point: Codable {
        var x: Double
        var label: String
    }

    var flag: Bool
    var count: Int
    var tiny: Int8
    var short: Int16
    var medium: Int32
    var long: Int64
    var unsigned: UInt
    var byte: UInt8
    var word: UInt16
    var dword: UInt32
    var qword: UInt64
    var score: Double
    var ratio: Float
    var title: String
    var blob: Data
    var raw: [UInt8]
    var createdAt: Date
    var id: UUID
    var point: Point
    var maybeFlag: Bool?
    var maybeCount: Int?
    var maybeLong: Int64?
    var maybeTiny: Int8?
    var maybeWord: UInt16?
    var maybeScore: Double?
    var maybeRatio: Float?
    var maybeTitle: String?
    var maybeBlob: Data?
    var maybeDate: Date?
    var maybeID: UUID?
    var maybePoint: Point?
    var parent: RecordID<EveryKind>?
    var owner: RecordID<EveryKind>
    var children: [RecordID<EveryKind>]

    static let attributeDefaults: [String: Value] = ["flag": true, "score": 0.5, "title": "untitled", "tiny": 7, "maybeTitle": "default"]

    /// What a stored value of each attribute is; `range` bounds integers that decode cleanly.
    enum Kind: CaseIterable {
        case bool, int, double, string, data, date, uuid, codable, reference, references
    }

    static let attributes: [(name: String, kind: Kind, range: ClosedRange<Int64>?, isOptional: Bool)] = [
        ("flag", .bool, nil, false), ("count", .int, nil, false), ("tiny", .int, -128...127, false),
        ("short", .int, -32_768...32_767, false), ("medium", .int, Int64(Int32.min)...Int64(Int32.max), false),
        ("long", .int, nil, false), ("unsigned", .int, 0...Int64.max, false), ("byte", .int, 0...255, false),
        ("word", .int, 0...65_535, false), ("dword", .int, 0...Int64(UInt32.max), false), ("qword", .int, 0...Int64.max, false),
        ("score", .double, nil, false), ("ratio", .double, nil, false), ("title", .string, nil, false),
        ("blob", .data, nil, false), ("raw", .data, nil, false), ("createdAt", .date, nil, false), ("id", .uuid, nil, false),
        ("point", .codable, nil, false), ("maybeFlag", .bool, nil, true), ("maybeCount", .int, nil, true),
        ("maybeLong", .int, nil, true), ("maybeTiny", .int, -128...127, true), ("maybeWord", .int, 0...65_535, true),
        ("maybeScore", .double, nil, true), ("maybeRatio", .double, nil, true), ("maybeTitle", .string, nil, true),
        ("maybeBlob", .data, nil, true), ("maybeDate", .date, nil, true), ("maybeID", .uuid, nil, true),
        ("maybePoint", .codable, nil, true), ("parent", .reference, nil, true), ("owner", .reference, nil, false),
        ("children", .references, nil, true),
    ]
}

/// A coding key for any name.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A record whose hand-written `init(from:)` asks its container everything — `allKeys`,
/// `contains`, `decodeNil`, every concrete and generic `decode` and `decodeIfPresent`, a
/// super-decoder — for a set of names, and writes down every answer and every error: two
/// decoding paths agree when their transcripts do.
struct Probe: PersistentRecord {
    /// Attributes of ``EveryKind`` of every kind, one that only a layout may name, one only this
    /// type's defaults name, and one nothing names.
    static let probed = ["flag", "count", "tiny", "qword", "score", "ratio", "title", "blob", "createdAt", "id", "point",
                         "maybeTitle", "maybeCount", "owner", "children", "legacy", "fromDefaults", "nowhere"]
    static let attributeDefaults: [String: Value] = ["flag": false, "title": "untitled", "fromDefaults": "d", "nullDefault": nil]

    var transcript: [String]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        var lines = ["keys \(container.allKeys.map(\.stringValue))"]
        for name in Self.probed {
            let key = AnyKey(stringValue: name)
            func note(_ label: String, _ read: () throws -> Any) {
                do { lines.append("\(name) \(label): \(try read())") } catch { lines.append("\(name) \(label) failed: \(error)") }
            }
            func generic<T: Decodable>(_: T.Type) throws -> T { try container.decode(T.self, forKey: key) }
            func genericIfPresent<T: Decodable>(_: T.Type) throws -> T? { try container.decodeIfPresent(T.self, forKey: key) }
            note("contains") { container.contains(key) }
            note("nil") { try container.decodeNil(forKey: key) }
            note("String") { try container.decode(String.self, forKey: key) }
            note("Bool") { try container.decode(Bool.self, forKey: key) }
            note("Double") { try container.decode(Double.self, forKey: key).bitPattern }
            note("Float") { try container.decode(Float.self, forKey: key).bitPattern }
            note("Int") { try container.decode(Int.self, forKey: key) }
            note("Int8") { try container.decode(Int8.self, forKey: key) }
            note("Int16") { try container.decode(Int16.self, forKey: key) }
            note("Int32") { try container.decode(Int32.self, forKey: key) }
            note("Int64") { try container.decode(Int64.self, forKey: key) }
            note("UInt") { try container.decode(UInt.self, forKey: key) }
            note("UInt8") { try container.decode(UInt8.self, forKey: key) }
            note("UInt16") { try container.decode(UInt16.self, forKey: key) }
            note("UInt32") { try container.decode(UInt32.self, forKey: key) }
            note("UInt64") { try container.decode(UInt64.self, forKey: key) }
            note("String?") { try container.decodeIfPresent(String.self, forKey: key) as Any }
            note("Bool?") { try container.decodeIfPresent(Bool.self, forKey: key) as Any }
            note("Double?") { try container.decodeIfPresent(Double.self, forKey: key)?.bitPattern as Any }
            note("Float?") { try container.decodeIfPresent(Float.self, forKey: key)?.bitPattern as Any }
            note("Int?") { try container.decodeIfPresent(Int.self, forKey: key) as Any }
            note("Int64?") { try container.decodeIfPresent(Int64.self, forKey: key) as Any }
            note("UInt8?") { try container.decodeIfPresent(UInt8.self, forKey: key) as Any }
            note("generic String") { try generic(String.self) }
            note("generic Bool") { try generic(Bool.self) }
            note("generic Double") { try generic(Double.self).bitPattern }
            note("generic Int") { try generic(Int.self) }
            note("generic Int64") { try generic(Int64.self) }
            note("generic Int16") { try generic(Int16.self) }
            note("generic Date") { try generic(Date.self).timeIntervalSinceReferenceDate.bitPattern }
            note("generic UUID") { try generic(UUID.self) }
            note("generic Data") { try generic(Data.self) }
            note("generic [UInt8]") { try generic([UInt8].self) }
            note("generic Point") { try generic(EveryKind.Point.self).label }
            note("generic RecordID") { try generic(RecordID<Probe>.self) }
            note("generic [RecordID]") { try generic([RecordID<Probe>].self) }
            note("generic String?") { try generic(String?.self) as Any }
            note("generic String? if present") { try genericIfPresent(String?.self) as Any }
            note("Date?") { try genericIfPresent(Date.self)?.timeIntervalSinceReferenceDate.bitPattern as Any }
            note("UUID?") { try genericIfPresent(UUID.self) as Any }
            note("Point?") { try genericIfPresent(EveryKind.Point.self)?.label as Any }
            note("generic String if present") { try genericIfPresent(String.self) as Any }
            note("generic Int if present") { try genericIfPresent(Int.self) as Any }
            note("RecordID?") { try genericIfPresent(RecordID<Probe>.self) as Any }
            note("super String") { try container.superDecoder().container(keyedBy: AnyKey.self).decode(String.self, forKey: key) }
        }
        transcript = lines
    }

    func encode(to encoder: any Encoder) throws {}
}

/// A record that keeps its decoder and container past `init(from:)`, as a hand-written one may.
final class Keeper: PersistentRecord {
    let decoder: any Decoder
    let container: KeyedDecodingContainer<AnyKey>

    init(from decoder: any Decoder) throws {
        self.decoder = decoder
        container = try decoder.container(keyedBy: AnyKey.self)
    }

    func encode(to encoder: any Encoder) throws {}
}

extension RecordDirectCodingTests {
    /// A random value of `kind`; with `range`, an integer in it (else any, often out of range);
    /// unless `clean`, sometimes one that cannot be decoded (not JSON, two ids for a to-one).
    static func randomValue(_ kind: EveryKind.Kind, range: ClosedRange<Int64>? = nil, clean: Bool = false,
                            _ random: inout SeededRandom) -> Value
    {
        func pick<T>(_ choices: [T]) -> T { choices[Int(random.next() % UInt64(choices.count))] }
        switch kind {
        case .bool: return .bool(random.next() % 2 == 0)
        case .int:
            let edges: [Int64] = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32_767, 32_768, -32_769, 65_535, 65_536,
                                  Int64(Int32.max) + 1, Int64(UInt32.max) + 1, .max, .min]
            let value = random.next() % 3 == 0 ? pick(edges) : Int64(bitPattern: random.next()) >> Int64(random.next() % 64)
            guard let range else { return .int(value) }
            return .int(range.contains(value) ? value : Swift.max(range.lowerBound, Swift.min(range.upperBound, value % 100)))
        case .double:
            // Clean: any Float's value (Float attributes read only those; a double beyond Float's
            // range is a typed error), else any bit pattern.
            let pattern = clean ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))) : Double(bitPattern: random.next())
            return .double(random.next() % 4 == 0 ? pattern : Double(Int64(bitPattern: random.next()) % 10_000) / 8)
        case .string:
            let pieces = ["", "a", "Ada", "café", "👩‍👩‍👧", "e\u{301}", "שלום", "数据", "\u{0}", "x y", String(repeating: "long ", count: 30)]
            return .string((0..<Int(random.next() % 4)).map { _ in pick(pieces) }.joined())
        case .data: return .data(random.bytes(pick([0, 1, 5, 16, 200])))
        case .date:
            return .date(Date(timeIntervalSinceReferenceDate: random.next() % 5 == 0 ? Double(bitPattern: random.next())
                                                                                     : Double(Int64(bitPattern: random.next()) % 1_000_000_000)))
        case .uuid:
            let b = random.bytes(16)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .codable:
            if !clean && random.next() % 4 == 0 { return .codable(random.bytes(Int(random.next() % 12))) }  // not JSON
            return .codable(Array("{\"label\":\"p\(random.next() % 100)\",\"x\":\(Int(random.next() % 1000))}".utf8))
        case .reference: return .references(!clean && random.next() % 3 == 0 ? [1, 2 + random.next() % 100] : [1 + random.next() % 1_000])
        case .references: return .references(Array(Set((0..<(1 + random.next() % 4)).map { _ in 1 + random.next() % 50 })).sorted())
        }
    }

    /// A layout of ``EveryKind``'s attributes under shuffled ids, and a record's values for it.
    /// Clean rounds store every required attribute with a value of its kind, in range; other
    /// rounds leave attributes out of the layout and the record, store values of other kinds,
    /// give catalog defaults of any kind, and add ids and names only one side knows.
    static func randomCase(clean: Bool, _ random: inout SeededRandom) -> (layout: RecordLayout, values: [UInt32: Value]) {
        var ids = Array(UInt32(1)...UInt32(EveryKind.attributes.count + 20))
        ids.shuffle(using: &random)
        var attributes: [(name: String, id: UInt32, defaultValue: Value)] = []
        var values: [UInt32: Value] = [:]
        for (index, attribute) in EveryKind.attributes.enumerated() {
            let id = ids[index]
            let inLayout = clean || random.next() % 10 != 0
            let otherKind = EveryKind.Kind.allCases[Int(random.next() % UInt64(EveryKind.Kind.allCases.count))]
            let defaultValue: Value =
                switch random.next() % 12 {
                case 0, 1: randomValue(attribute.kind, range: attribute.range, &random)
                case 2 where !clean: randomValue(otherKind, &random)
                default: .null
                }
            if inLayout { attributes.append((attribute.name, id, defaultValue)) }
            let canBeAbsent = attribute.isOptional || !defaultValue.isNull || EveryKind.attributeDefaults[attribute.name] != nil
            let roll = random.next() % 10
            if roll < 2 && (canBeAbsent || !clean) { continue }
            values[id] = roll == 2 && !clean ? randomValue(otherKind, &random)
                                             : randomValue(attribute.kind, range: clean ? attribute.range : nil, clean: clean, &random)
        }
        // A name only the layout has, and values of ids only the record has.
        attributes.append(("legacy", ids[EveryKind.attributes.count], randomValue(.string, &random)))
        if random.next() % 2 == 0 { values[ids[EveryKind.attributes.count]] = randomValue(.int, &random) }
        for extra in ids[(EveryKind.attributes.count + 1)...] where random.next() % 4 == 0 {
            values[extra] = randomValue(EveryKind.Kind.allCases[Int(random.next() % 10)], &random)
        }
        return (RecordLayout(attributes: attributes), values)
    }

    /// The same errors: equal `FormatError`s or equal `RecordCodingError`s.
    static func sameError(_ a: any Error, _ b: any Error) -> Bool {
        if let a = a as? FormatError, let b = b as? FormatError { return a == b }
        if let a = a as? RecordCodingError, let b = b as? RecordCodingError { return a == b }
        return false
    }

    /// Decodes `bytes` through `RecordCodec.decodeFields` and `decode(_:fields:layout:)`, and
    /// straight from the bytes.
    func bothWays<Record: PersistentRecord>(_: Record.Type, _ bytes: [UInt8], _ layout: RecordLayout)
        -> (viaFields: Result<Record, any Error>, direct: Result<Record, any Error>)
    {
        (Result { try decoder.decode(Record.self, fields: try RecordCodec.decodeFields(bytes), layout: layout) },
         Result { try bytes.withUnsafeBytes { try decoder.decode(Record.self, bytes: $0, layout: layout) } })
    }

    /// Whether both ways decode `bytes` alike: the same ``EveryKind`` (compared by its values,
    /// bit for bit), the same ``Probe`` transcript, or the same error for each.
    /// - Returns: whether ``EveryKind`` decoded (nil when the ways disagree).
    func agree(_ bytes: [UInt8], _ layout: RecordLayout, _ context: String) throws -> Bool? {
        var decoded: Bool?
        switch bothWays(EveryKind.self, bytes, layout) {
        case (.success(let a), .success(let b)):
            #expect(try encoder.encode(a) == encoder.encode(b), "EveryKind, \(context)")
            decoded = true
        case (.failure(let a), .failure(let b)):
            #expect(Self.sameError(a, b), "EveryKind: \(a) vs \(b), \(context)")
            decoded = false
        case (let a, let b):
            Issue.record("EveryKind: \(a) vs \(b), \(context)")
        }
        switch bothWays(Probe.self, bytes, layout) {
        case (.success(let a), .success(let b)): #expect(a.transcript == b.transcript, "Probe, \(context)")
        case (.failure(let a), .failure(let b)): #expect(Self.sameError(a, b), "Probe: \(a) vs \(b), \(context)")
        case (let a, let b):
            Issue.record("Probe: \(a) vs \(b), \(context)")
            decoded = nil
        }
        return decoded
    }

    /// Straight from bytes and through `Value`s, records of every kind decode to the same
    /// record or fail with the same error: values of the attribute's kind or another, integers
    /// in and out of range, absent attributes with catalog and type defaults (of any kind),
    /// attributes the layout lacks, and ids the layout does not name.
    @Test func decodingStraightFromBytesAgreesWithDecodingValues() throws {
        let seed = SeededRandom.seed(default: 0xB7_7E5)
        print("RecordDirectCodingTests.decodingStraightFromBytesAgreesWithDecodingValues seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var cleanDecoded = 0
        var failures = 0
        var transcriptsWithErrors = 0
        for round in 0..<600 {
            let clean = round % 2 == 0
            let (layout, values) = Self.randomCase(clean: clean, &random)
            let bytes = RecordCodec.encode(values)
            let decoded = try agree(bytes, layout, "round \(round), seed \(seed)")
            if clean && decoded == true { cleanDecoded += 1 }
            if decoded == false { failures += 1 }
            if round < 20, let probe = try? bytes.withUnsafeBytes({ try decoder.decode(Probe.self, bytes: $0, layout: layout) }),
               probe.transcript.contains(where: { $0.contains("failed") }) && probe.transcript.contains(where: { !$0.contains("failed") })
            {
                transcriptsWithErrors += 1
            }
        }
        // Both outcomes were compared many times.
        #expect(cleanDecoded >= 250, "seed \(seed)")
        #expect(failures >= 100, "seed \(seed)")
        #expect(transcriptsWithErrors >= 15, "seed \(seed)")
    }

    /// Mutated records of every kind (flipped, cut, repeated and inserted bytes): the same
    /// record, transcript or error both ways.
    @Test func decodingStraightFromBytesAgreesOnHostileBytes() throws {
        let seed = SeededRandom.seed(default: 0xB7_7E6)
        print("RecordDirectCodingTests.decodingStraightFromBytesAgreesOnHostileBytes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var outcomes: [Bool: Int] = [:]
        for round in 0..<1_500 {
            let (layout, values) = Self.randomCase(clean: round % 3 != 0, &random)
            let bytes = Mutator.mutate(RecordCodec.encode(values), round: round, using: &random)
            if let decoded = try agree(bytes, layout, "round \(round), seed \(seed)") { outcomes[decoded, default: 0] += 1 }
        }
        #expect(outcomes[true, default: 0] >= 50 && outcomes[false, default: 0] >= 500, "\(outcomes), seed \(seed)")
    }

    /// The typed pieces straight from bytes, pinned: type defaults fill attributes absent from
    /// the record and from the layout, catalog defaults come first, absent optionals are nil,
    /// and `allKeys` lists the layout's names with a value, then those only defaults give.
    @Test func decodingStraightFromBytesAppliesDefaultsInOrder() throws {
        let layout = RecordLayout(attributes: [("title", 1, "catalog title"), ("flag", 2, .null), ("legacy", 3, .null),
                                               ("count", 4, .null), ("maybeTitle", 5, .null)])
        let bytes = RecordCodec.encode([4: .int(-3), 9: .string("unnamed")])
        let probe = try bytes.withUnsafeBytes { try decoder.decode(Probe.self, bytes: $0, layout: layout) }
        #expect(probe.transcript.first == "keys [\"title\", \"flag\", \"count\", \"fromDefaults\"]")
        for line in ["title String: catalog title", "flag Bool: false", "count Int: -3", "fromDefaults String: d", "legacy contains: false",
                     "maybeTitle String?: nil", "nowhere nil: true",
                     "tiny Int8 failed: attribute tiny of type Int8 has no value and no default",
                     "count Int?: Optional(-3)", "count UInt8? failed: attribute count: the integer -3 does not fit in UInt8"]
        {
            #expect(probe.transcript.contains(line), "\(line)")
        }
    }

    /// A decoder or container kept past `init(from:)` reads the record's values later, though the
    /// bytes it was decoded from are gone: nothing keeps pointing into them.
    @Test func keptDecodersReadTheRecordAfterTheCall() throws {
        let layout = RecordLayout(attributes: [("title", 1, .null), ("count", 2, .null), ("blob", 3, .null), ("gone", 4, "fallback")])
        var bytes = RecordCodec.encode([1: .string("a title long enough for the heap"), 2: .int(42), 3: .data([1, 2, 3])])
        let keeper = try bytes.withUnsafeBytes { try decoder.decode(Keeper.self, bytes: $0, layout: layout) }
        for index in bytes.indices { bytes[index] = 0xFF }
        bytes = []
        let container = try keeper.decoder.container(keyedBy: AnyKey.self)
        for container in [container, keeper.container] {
            #expect(try container.decode(String.self, forKey: AnyKey(stringValue: "title")) == "a title long enough for the heap")
            #expect(try container.decode(Int.self, forKey: AnyKey(stringValue: "count")) == 42)
            #expect(try container.decode(Data.self, forKey: AnyKey(stringValue: "blob")) == Data([1, 2, 3]))
            #expect(try container.decode(String.self, forKey: AnyKey(stringValue: "gone")) == "fallback")
            #expect(container.allKeys.map(\.stringValue) == ["title", "count", "blob", "gone"])
        }
    }

    /// Strings are checked to be UTF-8 without making them: every sequence of one and two bytes,
    /// three- and four-byte sequences around every boundary of the encoding, and random bytes,
    /// alone and after ASCII, are accepted exactly when `String(validating:)` accepts them —
    /// read into the record or not (an id the layout lacks).
    @Test func stringsAreValidatedAsStringValidatingDoes() throws {
        struct Text: PersistentRecord { var text: String? }
        let seed = SeededRandom.seed(default: 0x07F8)
        print("RecordDirectCodingTests.stringsAreValidatedAsStringValidatingDoes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var sequences: [[UInt8]] = (0...255).map { [UInt8($0)] }
        for first in 0...255 { for second in 0...255 { sequences.append([UInt8(first), UInt8(second)]) } }
        let edges: [UInt8] = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
        for lead in 0xE0...0xF7 {
            for second in 0...255 {
                for third in edges {
                    sequences.append([UInt8(lead), UInt8(second), third])
                    if lead >= 0xF0 { for fourth in [0x7F, 0x80, 0xBF, 0xC0] as [UInt8] { sequences.append([UInt8(lead), UInt8(second), third, fourth]) } }
                }
            }
        }
        let alphabet: [UInt8] = [0x41, 0x7F, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xC0, 0xFF]
        for _ in 0..<5_000 {
            sequences.append((0..<Int(random.next() % 200)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
        }
        let named = RecordLayout(attributes: [("text", 1, .null)])
        let unnamed = RecordLayout(attributes: [("text", 2, .null)])
        var valid = 0
        for (index, sequence) in sequences.enumerated() {
            // After eight ASCII bytes, the first non-ASCII byte is past the first word checked.
            for payload in sequence.count == 2 && index % 8 != 0 ? [sequence] : [sequence, Array("ascii...".utf8) + sequence] {
                var length: [UInt8] = []
                var remaining = payload.count
                while remaining >= 0x80 { length.append(UInt8(remaining & 0x7F) | 0x80); remaining >>= 7 }
                length.append(UInt8(remaining))
                let bytes: [UInt8] = [1, 1, 1, 5] + length + payload
                let expected = String(validating: payload, as: UTF8.self)
                for layout in index % 4 == 0 ? [named, unnamed] : [named] {
                    let (viaFields, direct) = bothWays(Text.self, bytes, layout)
                    switch (viaFields, direct, expected) {
                    case (.success(let a), .success(let b), .some(let string)):
                        #expect(a.text.map { Array($0.utf8) } == (layout === named ? payload : nil) && b.text.map { Array($0.utf8) } == a.text.map { Array($0.utf8) },
                                "sequence \(index), seed \(seed)")
                        #expect(b.text == nil || b.text == string)
                        valid += 1
                    case (.failure(let a), .failure(let b), nil):
                        #expect(Self.sameError(a, b) && (b as? FormatError) == FormatError("value of attribute 1 is not valid UTF-8", at: 4),
                                "sequence \(index): \(b), seed \(seed)")
                    default: Issue.record("sequence \(index) \(payload): \(viaFields) vs \(direct), seed \(seed)")
                    }
                }
            }
        }
        #expect(valid > 5_000)
    }
}
