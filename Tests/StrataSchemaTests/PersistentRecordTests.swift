#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataTestSupport

/// A record with one property of every attribute type, optionals and a nested codable value.
struct Sample: PersistentRecord, Equatable {
    struct Address: Codable, Equatable {
        var street: String
        var lines: [String]
        var coordinates: [Double]?
    }

    enum Status: String, Codable, CaseIterable { case active, archived }

    var flag: Bool
    var count: Int
    var small: Int8
    var unsigned: UInt32
    var big: UInt64
    var score: Double
    var ratio: Float
    var title: String
    var blob: Data
    var bytes: [UInt8]
    var createdAt: Date
    var id: UUID
    var address: Address
    var status: Status
    var tags: [String]
    var note: String?
    var rating: Double?
    var lastSeen: Date?
    var backup: Address?

    static let attributeOptions: [String: Attribute.Options] = ["title": [.indexed], "id": [.unique]]
    static let attributeDefaults: [String: Value] = ["count": 0]
    static let originalAttributeNames: [String: String] = ["title": "name"]

    static func make(note: String? = "a note", title: String = "Title") -> Sample {
        Sample(flag: true, count: -42, small: -8, unsigned: 4_000_000_000, big: UInt64(Int64.max), score: -0.0, ratio: 1.5,
               title: title, blob: Data([0, 1, 2]), bytes: [255, 0], createdAt: Date(timeIntervalSinceReferenceDate: 12_345.678_9),
               id: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
               address: Address(street: "Main", lines: ["a", "b"], coordinates: nil), status: .archived, tags: ["x", "y"],
               note: note, rating: nil, lastSeen: Date(timeIntervalSinceReferenceDate: -5), backup: nil)
    }
}

@Suite struct PersistentRecordTests {
    let encoder = RecordEncoder()
    let decoder = RecordDecoder()

    @Test func derivesTheEntityFromTheCodableConformance() throws {
        let entity = try Sample.entity()
        let expected = Entity("Sample", attributes: [
            .bool("flag"), .int("count", default: 0), .int("small"), .int("unsigned"), .int("big"),
            .double("score"), .double("ratio"), .string("title", options: [.indexed], originalName: "name"),
            .data("blob"), .data("bytes"), .date("createdAt"), .uuid("id", options: [.unique]),
            .codable("address", typeName: "Address"), .codable("status", typeName: "Status"), .codable("tags", typeName: "Array<String>"),
            .string("note", isOptional: true), .double("rating", isOptional: true), .date("lastSeen", isOptional: true),
            .codable("backup", typeName: "Address", isOptional: true),
        ])
        #expect(entity == expected)
        try Schema([entity]).validate()
    }

    @Test func roundTripsEveryAttributeType() throws {
        let record = Sample.make()
        let values = try encoder.encode(record)
        #expect(values["flag"] == .bool(true))
        #expect(values["count"] == .int(-42) && values["small"] == .int(-8) && values["unsigned"] == .int(4_000_000_000))
        #expect(values["big"] == .int(.max))
        #expect(values["score"] == .double(-0.0) && values["ratio"] == .double(1.5))
        #expect(values["blob"] == .data([0, 1, 2]) && values["bytes"] == .data([255, 0]))
        #expect(values["createdAt"] == .date(Date(timeIntervalSinceReferenceDate: 12_345.678_9)))
        #expect(values["status"] == .codable(Array("\"archived\"".utf8)))
        #expect(values["tags"] == .codable(Array("[\"x\",\"y\"]".utf8)))
        #expect(values["address"] == .codable(Array("{\"lines\":[\"a\",\"b\"],\"street\":\"Main\"}".utf8)))  // sorted keys
        #expect(values["rating"] == nil && values["backup"] == nil)  // nil optionals are absent
        let decoded = try decoder.decode(Sample.self, from: values)
        #expect(decoded == record)
        #expect(decoded.score.sign == .minus)
    }

    @Test func optionalsRoundTripNilAndNonNil() throws {
        var record = Sample.make(note: nil)
        record.rating = 4.5
        record.backup = .init(street: "", lines: [], coordinates: [1, .infinity, -2])
        record.lastSeen = nil
        let values = try encoder.encode(record)
        #expect(values["note"] == nil && values["lastSeen"] == nil && values["rating"] == .double(4.5))
        #expect(try decoder.decode(Sample.self, from: values) == record)
        // An explicit .null reads as nil too.
        var withNull = values
        withNull["rating"] = .null
        #expect(try decoder.decode(Sample.self, from: withNull).rating == nil)
    }

    @Test func stringsAndDataOfEveryShapeRoundTrip() throws {
        let seed = SeededRandom.seed(default: 0x7E57)
        print("PersistentRecordTests.stringsAndDataOfEveryShapeRoundTrip seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let titles = ["", "ASCII", "👩‍👩‍👧‍👦🏳️‍🌈", "e\u{301}\u{323}", "\u{E9}", "שלום עולם", "مرحبا بالعالم", "a\u{0}b", "\u{FEFF}\u{200F}x",
                      String(repeating: "ß文🙂", count: 400_000)]
        for title in titles {
            var record = Sample.make(title: title)
            record.blob = Data(random.bytes(title.utf8.count % 5000))
            record.bytes = []
            let decoded = try decoder.decode(Sample.self, from: try encoder.encode(record))
            #expect(Array(decoded.title.utf8) == Array(title.utf8), "byte-exact, seed \(seed)")
            #expect(decoded == record)
        }
    }

    @Test func valuesOverOneMebibyteRoundTripThroughBytes() throws {
        let seed = SeededRandom.seed(default: 0x1313)
        print("PersistentRecordTests.valuesOverOneMebibyteRoundTripThroughBytes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var record = Sample.make()
        record.blob = Data(random.bytes(1 << 20))
        record.tags = (0..<20_000).map { "tag\($0)" }
        let catalog = try SchemaCatalog().register(Schema([try Sample.entity()])).catalog
        let version = try #require(catalog.latest)
        let entityID = try #require(version.entity(named: "Sample")?.id)
        let ids = version.attributeIDs(ofEntity: entityID)
        let bytes = try encoder.encode(record, attributeIDs: ids)
        #expect(bytes.count > 1 << 20)
        let names = Dictionary(uniqueKeysWithValues: ids.map { ($1, $0) })
        let decoded = try decoder.decode(Sample.self, from: try RecordCodec.decode(bytes), attributeNames: names)
        #expect(decoded == record)
        // A single attribute can be read straight from the bytes.
        #expect(try RecordCodec.value(of: try #require(ids["title"]), in: bytes) == .string("Title"))
    }

    @Test func defaultsFillAttributesTheRecordLacks() throws {
        var values = try encoder.encode(Sample.make())
        values["count"] = nil
        #expect(try decoder.decode(Sample.self, from: values).count == 0)
        values["flag"] = nil
        #expect(throws: RecordCodingError.missingValue(attribute: "flag", type: "Bool")) { try decoder.decode(Sample.self, from: values) }
    }

    @Test func decodingChecksTypesAndRanges() throws {
        let values = try encoder.encode(Sample.make())
        func failure(_ key: String, _ value: Value) -> RecordCodingError? {
            var changed = values
            changed[key] = value
            do { _ = try decoder.decode(Sample.self, from: changed); return nil } catch { return error }
        }
        #expect(failure("small", .int(300)) == .integerOutOfRange(attribute: "small", value: "300", type: "Int8"))
        #expect(failure("unsigned", .int(-1)) == .integerOutOfRange(attribute: "unsigned", value: "-1", type: "UInt32"))
        #expect(failure("score", .int(1)) == .typeMismatch(attribute: "score", expected: "Double", found: .int(1)))
        #expect(failure("note", .bool(true)) == .typeMismatch(attribute: "note", expected: "String", found: .bool(true)))
        #expect(failure("address", .string("Main")) == .typeMismatch(attribute: "address", expected: "Address", found: .string("Main")))
        guard case .invalidCodableValue(let attribute, let type, _)? = failure("status", .codable(Array("\"deleted\"".utf8))) else {
            Issue.record("a raw value that is not a case")
            return
        }
        #expect(attribute == "status" && type == "Status")
    }

    @Test func encodingRefusesUnsignedValuesAboveInt64() {
        var record = Sample.make()
        record.big = .max
        #expect(throws: RecordCodingError.integerOutOfRange(attribute: "big", value: "18446744073709551615", type: "Int64")) {
            try encoder.encode(record)
        }
    }

    @Test func bytesNeedAnIDForEveryValue() throws {
        #expect(throws: RecordCodingError.unknownAttribute(type: "Sample", attribute: "address")) {
            try encoder.encode(Sample.make(), attributeIDs: [:])
        }
    }

    /// Discovery and encoding agree: every value the encoder produces is accepted by the
    /// attribute the derived entity declares for it, and every non-optional attribute has a value.
    @Test func encodedValuesFitTheDerivedEntity() throws {
        let entity = try Sample.entity()
        for record in [Sample.make(), Sample.make(note: nil)] {
            let values = try encoder.encode(record)
            #expect(Set(values.keys).isSubset(of: Set(entity.attributes.map(\.name))))
            for attribute in entity.attributes {
                #expect(attribute.accepts(values[attribute.name] ?? .null), "\(attribute.name)")
            }
        }
    }

    /// The whole path of a lightweight migration, without I/O: a record written with version
    /// 1's ids is read as version 2's type. The renamed attribute keeps its value through its
    /// id, the added one reads its default, the dropped one is ignored.
    @Test func recordsWrittenUnderAnOlderVersionReadUnderTheNewOne() throws {
        struct PersonV1: PersistentRecord {
            var fullName: String
            var createdAt: Date
            var note: String?
            var legacyScore: Int
            static var entityName: String { "Person" }
        }
        struct PersonV2: PersistentRecord, Equatable {
            var fullName: String
            var createdAt: Date
            var remark: String?
            var isFavorite: Bool
            static var entityName: String { "Person" }
            static let attributeDefaults: [String: Value] = ["isFavorite": false]
            static let originalAttributeNames = ["remark": "note"]
        }
        let (v1Catalog, v1) = try SchemaCatalog().register(Schema(version: Schema.Version(1, 0, 0), types: [PersonV1.self]))
        let (catalog, v2) = try v1Catalog.register(Schema(version: Schema.Version(1, 1, 0), types: [PersonV2.self]))
        #expect(v1 == 1 && v2 == 2)
        func ids(_ version: UInt32) throws -> [String: UInt32] {
            let catalogVersion = try #require(catalog.version(id: version))
            return catalogVersion.attributeIDs(ofEntity: try #require(catalogVersion.entity(named: "Person")?.id))
        }
        let written = try encoder.encode(PersonV1(fullName: "Lovelace, Ada", createdAt: Date(timeIntervalSinceReferenceDate: 1),
                                                  note: "first programmer", legacyScore: 7), attributeIDs: try ids(v1))
        let names = Dictionary(uniqueKeysWithValues: try ids(v2).map { ($1, $0) })
        let read = try decoder.decode(PersonV2.self, from: try RecordCodec.decode(written), attributeNames: names)
        #expect(read == PersonV2(fullName: "Lovelace, Ada", createdAt: Date(timeIntervalSinceReferenceDate: 1),
                                 remark: "first programmer", isFavorite: false))
    }

    @Test func schemaFromRecordTypesMatchesTheHandWrittenOne() throws {
        struct Person: PersistentRecord {
            var fullName: String
            var createdAt: Date
            var note: String?
            static let attributeOptions: [String: Attribute.Options] = ["fullName": [.indexed]]
        }
        let schema = try Schema(types: [Person.self])
        #expect(schema.checksum == Fixtures.person.checksum)
    }
}
