import Testing
import StrataSchema
import StrataFormat
import StrataTestSupport

@Suite struct SchemaCatalogRegistrationTests {
    func register(_ schemas: Schema...) throws -> (SchemaCatalog, [UInt32]) {
        var catalog = SchemaCatalog()
        var ids: [UInt32] = []
        for schema in schemas {
            let (next, id) = try catalog.register(schema)
            try next.checkInvariants()
            catalog = next
            ids.append(id)
        }
        return (catalog, ids)
    }

    /// Property id of `entity.name` in a version (own or inherited attribute or relationship).
    func propertyID(_ version: CatalogVersion?, _ entity: String, _ name: String) -> UInt32? {
        guard let version, let id = version.entity(named: entity)?.id else { return nil }
        return (version.resolvedAttributes(ofEntity: id).map { ($0.name, $0.id) }
            + version.resolvedRelationships(ofEntity: id).map { ($0.name, $0.id) }).first { $0.0 == name }?.1
    }

    @Test func idsStartAtOneInDeclarationOrder() throws {
        let (catalog, ids) = try register(Fixtures.library)
        #expect(ids == [1])
        let version = try #require(catalog.latest)
        #expect(version.checksum == Fixtures.library.checksum)
        #expect(version.schemaVersion == Schema.Version(1, 0, 0))
        #expect(version.entities.map(\.name) == ["Item", "Book", "Author"])
        #expect(version.entities.map(\.id) == [1, 2, 3])
        #expect(version.entity(named: "Book")?.parentID == 1)
        #expect(version.entity(named: "Book")?.attributes.map(\.id) == [3, 4, 5, 6, 7, 8])
        #expect(version.entity(named: "Book")?.relationships.map(\.id) == [9])
        #expect(version.entity(named: "Author")?.attributes.map(\.id) == [10, 11])
        let books = try #require(version.entity(named: "Author")?.relationships.first)
        #expect(books.id == 12 && books.destinationID == 2 && books.inverseID == 9 && books.deleteRule == .deny)
        #expect(version.entity(named: "Book")?.relationships.first?.inverseID == 12)
        #expect(catalog.nextEntityID == 4 && catalog.nextPropertyID == 13 && catalog.nextVersionID == 2)
        #expect(version.attributeIDs(ofEntity: 2) == ["id": 1, "createdAt": 2, "title": 3, "pages": 4, "rating": 5,
                                                      "cover": 6, "isFavorite": 7, "metadata": 8])
        #expect(version.shape.checksum == version.checksum)
    }

    @Test func registeringTheSameSchemaAgainChangesNothing() throws {
        let (catalog, ids) = try register(Fixtures.library, Fixtures.library)
        #expect(ids == [1, 1])
        #expect(catalog.versions.count == 1)
        // Declaration order is not part of the shape either.
        var reordered = Fixtures.library
        reordered.entities.reverse()
        #expect(try catalog.register(reordered).versionID == 1)
    }

    @Test func aNewVersionNumberWithTheSameShapeIsANewVersionWithTheSameIDs() throws {
        var bumped = Fixtures.library
        bumped.version = Schema.Version(1, 1, 0)
        let (catalog, ids) = try register(Fixtures.library, bumped)
        #expect(ids == [1, 2])
        #expect(catalog.versionIDs(withChecksum: Fixtures.library.checksum) == [1, 2])
        #expect(catalog.versions[0].entities == catalog.versions[1].entities)
    }

    @Test func renamesWithOriginalNameKeepTheirIDs() throws {
        let renamed = Fixtures.library
            .changing("Author") { $0.name = "Writer"; $0.originalName = "Author"; $0.attributes[0].name = "fullName"; $0.attributes[0].originalName = "name" }
            .changing("Writer") { $0.relationships[0].inverse = "writers" }
            .changing("Book") { $0.relationships[0].destination = "Writer"; $0.relationships[0].name = "writers"; $0.relationships[0].originalName = "authors" }
        let (catalog, _) = try register(Fixtures.library, renamed)
        let (v1, v2) = (catalog.versions[0], catalog.versions[1])
        #expect(v2.entity(named: "Writer")?.id == v1.entity(named: "Author")?.id)
        #expect(propertyID(v2, "Writer", "fullName") == propertyID(v1, "Author", "name"))
        #expect(propertyID(v2, "Book", "writers") == propertyID(v1, "Book", "authors"))
        #expect(catalog.nextPropertyID == 13)  // nothing new
    }

    /// The silent data loss users hit in other frameworks is explicit here: without
    /// originalName a renamed attribute is a new attribute with a new id.
    @Test func renamesWithoutOriginalNameGetNewIDs() throws {
        let renamed = Fixtures.library.changing("Author") { $0.attributes[0].name = "fullName" }
        let (catalog, _) = try register(Fixtures.library, renamed)
        #expect(propertyID(catalog.versions[1], "Author", "fullName") == 13)
    }

    @Test func aChangedStorageTypeGetsANewIDButACodableTypeNameDoesNot() throws {
        let changed = Fixtures.library.changing("Book") {
            $0.attributes[1] = .double("pages", default: 0)  // int → double
            $0.attributes[5].type = .codable(typeName: "BookMetadata")
            $0.attributes[0].isOptional = true  // optionality and options keep the id
            $0.attributes[0].options = [.unique]
        }
        let (catalog, _) = try register(Fixtures.library, changed)
        let (v1, v2) = (catalog.versions[0], catalog.versions[1])
        #expect(propertyID(v2, "Book", "pages") == 13)
        #expect(propertyID(v2, "Book", "metadata") == propertyID(v1, "Book", "metadata"))
        #expect(propertyID(v2, "Book", "title") == propertyID(v1, "Book", "title"))
    }

    @Test func droppedThenReaddedAttributesGetNewIDsAndIDsAreNeverReused() throws {
        let dropped = Fixtures.library.changing("Author") { $0.attributes.removeLast() }
        let (catalog, _) = try register(Fixtures.library, dropped, Fixtures.library)
        #expect(propertyID(catalog.versions[2], "Author", "born") == 13)
        #expect(propertyID(catalog.versions[0], "Author", "born") == 11)
        let droppedEntity = Schema(version: Fixtures.library.version, [Entity("Item", isAbstract: true)])
        let (again, _) = try register(Fixtures.library, droppedEntity, Fixtures.library)
        #expect(again.latest?.entities.map(\.id) == [1, 4, 5])
    }

    @Test func aRelationshipToAnotherEntityGetsANewID() throws {
        let changed = Schema(version: Fixtures.library.version, Fixtures.library.entities + [Entity("Person")])
            .changing("Book") { $0.relationships[0] = .toMany("authors", destination: "Person") }
            .changing("Author") { $0.relationships[0].inverse = nil }
        let (catalog, _) = try register(Fixtures.library, changed)
        #expect(propertyID(catalog.versions[1], "Book", "authors") == 13)
        // Cardinality and delete rule changes keep it.
        let cardinality = Fixtures.library.changing("Author") { $0.relationships[0].cardinality = .toOne; $0.relationships[0].deleteRule = .cascade }
        let (other, _) = try register(Fixtures.library, cardinality)
        #expect(propertyID(other.versions[1], "Author", "books") == 12)
    }

    @Test func invalidSchemasAreRefused() {
        let invalid = Schema([Entity("A", parent: "Missing")])
        #expect(throws: CatalogError.invalidSchema(.unknownParent(entity: "A", parent: "Missing"))) {
            try SchemaCatalog().register(invalid)
        }
    }

    @Test func exhaustedIDSpacesAreAnErrorNotAWrap() throws {
        let full = SchemaCatalog(versions: [], nextVersionID: 1, nextEntityID: UInt32.max, nextPropertyID: 1)
        #expect(throws: CatalogError.identifiersExhausted(kind: "entity")) { try full.register(Fixtures.person) }
        let noVersions = SchemaCatalog(versions: [], nextVersionID: UInt32.max, nextEntityID: 1, nextPropertyID: 1)
        #expect(throws: CatalogError.identifiersExhausted(kind: "version")) { try noVersions.register(Fixtures.person) }
    }
}

@Suite struct SchemaCatalogCodecTests {
    func sampleCatalog() throws -> SchemaCatalog {
        var catalog = SchemaCatalog()
        let renamed = Fixtures.library.changing("Author") { $0.attributes[0].name = "fullName"; $0.attributes[0].originalName = "name" }
        for schema in [Fixtures.person, Fixtures.library, renamed] { catalog = try catalog.register(schema).catalog }
        return catalog
    }

    @Test func roundTripsCanonically() throws {
        for catalog in [SchemaCatalog(), try sampleCatalog()] {
            let bytes = catalog.encoded()
            let decoded = try SchemaCatalog.decode(bytes)
            #expect(decoded == catalog)
            #expect(decoded.encoded() == bytes)
            let fromBuffer = try bytes.withUnsafeBytes { buffer throws(FormatError) in try SchemaCatalog.decode(buffer) }
            #expect(fromBuffer == catalog)
        }
    }

    /// Pinned bytes of a one-version catalog: the worked example in Docs/FileFormat.md.
    @Test func theWorkedExampleIsPinned() throws {
        let catalog = try SchemaCatalog().register(Fixtures.person).catalog
        #expect(hex(catalog.encoded()) == PinnedBytes.personCatalog)
    }

    @Test func headerErrors() throws {
        let good = try sampleCatalog().encoded()
        func decodeError(_ change: (inout [UInt8]) -> Void) -> FormatError? {
            var bytes = good
            change(&bytes)
            do { _ = try SchemaCatalog.decode(bytes); return nil } catch { return error }
        }
        #expect(decodeError { $0[0] = UInt8(ascii: "X") }?.reason == "not a schema catalog (wrong magic)")
        #expect(decodeError { $0[8] = 0 }?.offset == 8)
        let newer = decodeError { $0[8] = 4 }
        #expect(newer?.unsupportedVersion == 4 && newer?.offset == 8)
        // Format 3 (original names, which this one keeps) is refused as format 2 or 1: the flag
        // bit that announces an original name is unknown there.
        #expect(decodeError { $0[8] = 2 } != nil)
        #expect(decodeError { $0[8] = 1 } != nil)
        // Format 2 only for a catalog that needs it (an id changing identity), 3 only for one
        // that keeps an original name: not this one.
        let plain = try SchemaCatalog().register(Fixtures.library).catalog.encoded()
        #expect(plain[8] == 1)
        for format: UInt8 in [2, 3] {
            var bytes = plain
            bytes[8] = format
            #expect(throws: FormatError.self) { try SchemaCatalog.decode(bytes) }
            do { _ = try SchemaCatalog.decode(bytes) } catch {
                #expect(error.unsupportedVersion == nil && error.offset == 8, "format \(format)")
            }
        }
        #expect(decodeError { $0[10] = 1 }?.offset == 10)
        #expect(decodeError { $0.append(0) }?.reason == "1 bytes after the last catalog version")
        #expect(decodeError { $0[24] = 0xFF }?.offset == 24)  // version count beyond the bytes
        #expect(decodeError { $0[12] = 1 } != nil)  // next version id below the ids in use
    }

    @Test func everyTruncationIsAnError() throws {
        let good = try sampleCatalog().encoded()
        for length in 0..<good.count {
            #expect(throws: FormatError.self, "length \(length)") { try SchemaCatalog.decode(Array(good[..<length])) }
        }
    }

    /// Every single-bit flip is refused, except in the fields no check can cover (the id
    /// counters, which may grow, and the schema version numbers, which the checksum leaves
    /// out); a flip that is accepted decodes to a catalog that re-encodes to the same bytes.
    @Test func everyBitFlipIsRefusedOrCanonical() throws {
        let catalog = try sampleCatalog()
        let good = catalog.encoded()
        var uncheckable = Set(12..<24)  // next version, entity and property ids
        for index in catalog.versions.indices {
            let start = SchemaCatalog(versions: Array(catalog.versions[..<index]), nextVersionID: 1, nextEntityID: 1, nextPropertyID: 1)
                .encoded().count
            uncheckable.formUnion((start + 4)..<(start + 16))  // major, minor, patch
        }
        // The original name "name" of Author.fullName (format 3), which no check covers: after
        // the attribute's name, its type, flags and default, and the name's length.
        let fullName = [UInt8(8)] + Array("fullName".utf8)
        let at = try #require(good.indices.last { good[$0...].starts(with: fullName) })
        let originalName = (at + fullName.count + 4)..<(at + fullName.count + 8)
        #expect(good[originalName.lowerBound - 1] == 4 && Array(good[originalName]) == Array("name".utf8))
        uncheckable.formUnion(originalName)
        for index in good.indices {
            for bit in 0..<8 {
                var bytes = good
                bytes[index] ^= 1 << bit
                guard let decoded = try? SchemaCatalog.decode(bytes) else { continue }
                #expect(uncheckable.contains(index), "a flip of bit \(bit) at byte \(index) was accepted")
                #expect(decoded.encoded() == bytes, "byte \(index) bit \(bit)")
            }
        }
    }

    @Test func brokenInvariantsAreRefused() throws {
        let catalog = try sampleCatalog()
        func refused(_ change: (inout [CatalogVersion]) -> Void, _ expected: String) {
            var versions = catalog.versions
            change(&versions)
            let broken = SchemaCatalog(versions: versions, nextVersionID: catalog.nextVersionID,
                                       nextEntityID: catalog.nextEntityID, nextPropertyID: catalog.nextPropertyID)
            #expect(throws: FormatError.self, "\(expected)") { try SchemaCatalog.decode(broken.encoded()) }
            do { try broken.checkInvariants() } catch { #expect(error.reason.contains(expected), "\(error.reason)") }
        }
        refused({ $0.swapAt(0, 1) }, "version ids must increase")
        refused({ $0[1].entities[0].id = 9 }, "entity ids must increase")
        refused({ $0[1].entities[1].attributes[0].id = 1 }, "changed entity, kind or storage type")
        refused({ $0[2].entities[2].attributes[0].type = .int }, "changed entity, kind or storage type")
        refused({ $0[1].entities[1].relationships[0].destinationID = 99 }, "unknown destination id")
        refused({ $0[1].entities[1].relationships[0].inverseID = 3 }, "is not a relationship of its destination")
        refused({ $0[1].entities[1].parentID = 77 }, "unknown parent id")
        refused({ $0[1].entities[2].attributes[0].name = "x" }, "checksum")
        refused({ $0[1].entities[2].attributes.append($0[1].entities[2].attributes[0]) }, "property ids of")
        refused({ $0[1].entities[1].attributes[1].defaultValue = .string("0") }, "the recorded schema is invalid")
        refused({ $0[2].entities.insert($0[0].entities[0], at: 0) }, "entity id 1 reappears")
        refused({ $0[2].entities[1].attributes[0].id = 2 }, "property id 2 reappears")
        refused({ $0[1].entities[1].attributes[0].id = 2 }, "property id 2 changed entity")
    }

    @Test func newIDsMustBeAboveEveryEarlierID() throws {
        let withShelf = Schema(version: Schema.Version(1, 1, 0), Fixtures.library.entities + [Entity("Shelf")])
        let registered = try SchemaCatalog().register(Fixtures.library).catalog.register(withShelf).catalog
        var versions = registered.versions
        versions[0].entities[2].id = 5  // Author, as if allocated after Shelf (4)
        versions[0].entities[1].relationships[0].destinationID = 5
        let broken = SchemaCatalog(versions: versions, nextVersionID: 3, nextEntityID: 6, nextPropertyID: registered.nextPropertyID)
        #expect(throws: FormatError("schema catalog version 2: new entity id 3 is not above every earlier entity id (5)", at: 0)) {
            try broken.checkInvariants()
        }
    }

    /// 10,000 random and mutated inputs: decoding never traps, never allocates from an
    /// unchecked length, and anything accepted is canonical.
    @Test func fuzzedInputsNeverTrap() throws {
        let seed = SeededRandom.seed(default: 0xCA7A)
        print("SchemaCatalogCodecTests.fuzzedInputsNeverTrap seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let good = try sampleCatalog().encoded()
        var accepted = 0
        for round in 0..<10_000 {
            let input = Mutator.mutate(good, round: round, using: &random)
            if let decoded = try? SchemaCatalog.decode(input) {
                accepted += 1
                #expect(decoded.encoded() == input, "round \(round), seed \(seed)")
            }
        }
        print("SchemaCatalogCodecTests.fuzzedInputsNeverTrap accepted \(accepted) of 10000")
    }
}

/// Turns valid bytes into hostile ones, reproducibly.
enum Mutator {
    static func mutate(_ good: [UInt8], round: Int, using random: inout SeededRandom) -> [UInt8] {
        var bytes = good
        switch round % 6 {
        case 0:  // pure garbage, sometimes with the right magic in front
            bytes = random.bytes(Int.random(in: 0...200, using: &random))
            if round % 12 == 0 { bytes = Array(good.prefix(12)) + bytes }
        case 1:  // flip a few bytes
            for _ in 0...Int.random(in: 0...3, using: &random) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
        case 2:  // truncate
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
        case 3:  // large numbers in random places (lengths, counts)
            let at = Int.random(in: 0..<max(1, bytes.count - 4), using: &random)
            for offset in 0..<min(4, bytes.count - at) { bytes[at + offset] = 0xFF }
        case 4:  // duplicate or delete a range
            let start = Int.random(in: 0...bytes.count, using: &random)
            let end = min(bytes.count, start + Int.random(in: 0...16, using: &random))
            if random.next() & 1 == 0 { bytes.insert(contentsOf: bytes[start..<end], at: start) } else { bytes.removeSubrange(start..<end) }
        default:  // insert random bytes
            let at = Int.random(in: 0...bytes.count, using: &random)
            bytes.insert(contentsOf: random.bytes(Int.random(in: 1...8, using: &random)), at: at)
        }
        return bytes
    }
}
