import Testing
import StrataSchema
import StrataTestSupport

@Suite struct SchemaChecksumTests {
    /// Pinned: the checksum must never change for the same shape, in any run, process or
    /// platform. If this fails, the canonical form changed and every stored schema would
    /// look new — that needs a new canonical form version, not a new pin.
    @Test func aFixedSchemasChecksumIsPinned() {
        #expect(Fixtures.person.checksum.description == PinnedChecksums.person)
        #expect(Fixtures.library.checksum.description == PinnedChecksums.library)
        #expect(Schema([]).checksum.description == PinnedChecksums.empty)
    }

    @Test func declarationOrderDoesNotMatter() {
        let seed = SeededRandom.seed(default: 0xC4EC)
        print("SchemaChecksumTests.declarationOrderDoesNotMatter seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let expected = Fixtures.library.checksum
        for _ in 0..<50 {
            var shuffled = Fixtures.library
            shuffled.entities.shuffle(using: &random)
            for index in shuffled.entities.indices {
                shuffled.entities[index].attributes.shuffle(using: &random)
                shuffled.entities[index].relationships.shuffle(using: &random)
            }
            #expect(shuffled.checksum == expected, "seed \(seed)")
        }
    }

    @Test func versionOriginalNamesAndPreserveValueOnDeletionAreNotPartOfTheShape() {
        let expected = Fixtures.library.checksum
        var bumped = Fixtures.library
        bumped.version = Schema.Version(7, 0, 0)
        #expect(bumped.checksum == expected)
        #expect(Fixtures.library.changing("Book") { $0.originalName = "Volume" }.checksum == expected)
        #expect(Fixtures.library.changing("Book") { $0.attributes[0].originalName = "name" }.checksum == expected)
        #expect(Fixtures.library.changing("Book") { $0.relationships[0].originalName = "writers" }.checksum == expected)
        #expect(Fixtures.library.changing("Author") { $0.attributes[1].options.remove(.preserveValueOnDeletion) }.checksum == expected)
    }

    /// Every storage-relevant change gives a checksum different from the original and from
    /// every other change.
    @Test func everyStorageRelevantChangeChangesTheChecksum() {
        let base = Fixtures.library
        let changes: [(String, Schema)] = [
            ("rename attribute", base.changing("Book") { $0.attributes[0].name = "name" }),
            ("change type", base.changing("Book") { $0.attributes[1].type = .double; $0.attributes[1].defaultValue = .double(0) }),
            ("change codable type name", base.changing("Book") { $0.attributes[5].type = .codable(typeName: "Meta") }),
            ("required → optional", base.changing("Book") { $0.attributes[0].isOptional = true }),
            ("optional → required", base.changing("Book") { $0.attributes[2].isOptional = false }),
            ("add unique", base.changing("Book") { $0.attributes[0].options.insert(.unique) }),
            ("add index", base.changing("Author") { $0.attributes[0].options.insert(.indexed) }),
            ("remove index", base.changing("Book") { $0.attributes[0].options.remove(.indexed) }),
            ("change default", base.changing("Book") { $0.attributes[1].defaultValue = .int(1) }),
            ("remove default", base.changing("Book") { $0.attributes[1].defaultValue = .null }),
            ("add attribute", base.changing("Author") { $0.attributes.append(.string("bio", isOptional: true)) }),
            ("remove attribute", base.changing("Book") { $0.attributes.removeLast() }),
            ("move attribute to the parent", base.changing("Book") { $0.attributes.removeFirst() }
                .changing("Item") { $0.attributes.append(.string("title", options: [.indexed])) }),
            ("change delete rule", base.changing("Author") { $0.relationships[0].deleteRule = .cascade }),
            ("change cardinality", base.changing("Book") { $0.relationships[0].cardinality = .toOne }),
            ("relationship optionality", base.changing("Book") { $0.relationships[0].isOptional = false }),
            ("drop inverse", base.changing("Author") { $0.relationships[0].inverse = nil }),
            ("rename relationship", base.changing("Book") { $0.relationships[0].name = "writers" }),
            ("change destination", base.changing("Book") { $0.relationships[0].destination = "Item" }),
            ("add entity", Schema(version: base.version, base.entities + [Entity("Shelf")])),
            ("remove entity", Schema(version: base.version, Array(base.entities.dropLast()))),
            ("rename entity", base.changing("Author") { $0.name = "Writer" }),
            ("change parent", base.changing("Book") { $0.parent = nil }),
            ("abstract", base.changing("Item") { $0.isAbstract = false }),
        ]
        var seen: [SchemaChecksum: String] = [base.checksum: "base"]
        for (name, schema) in changes {
            let checksum = schema.checksum
            #expect(seen[checksum] == nil, "\(name) has the checksum of \(seen[checksum] ?? "")")
            seen[checksum] = name
        }
        #expect(seen.count == changes.count + 1)
    }

    /// The canonical form keeps item boundaries: moving bytes between adjacent names changes it.
    @Test func adjacentNamesDoNotRunTogether() {
        let a = Schema([Entity("AB", attributes: [.int("C")])])
        let b = Schema([Entity("A", attributes: [.int("BC")])])
        #expect(a.checksum != b.checksum)
        #expect(Schema([Entity("A"), Entity("B")]).checksum != Schema([Entity("AB")]).checksum)
    }

    @Test func duplicatesStillGiveADeterministicChecksum() {
        let one = Schema([Entity("A", attributes: [.int("x")]), Entity("A", attributes: [.string("x")])])
        let other = Schema([Entity("A", attributes: [.string("x")]), Entity("A", attributes: [.int("x")])])
        #expect(one.checksum == other.checksum)
    }

    @Test func hexRoundTrips() {
        let checksum = Fixtures.person.checksum
        #expect(checksum.bytes.count == 32)
        #expect(SchemaChecksum(hex: checksum.description) == checksum)
        #expect(SchemaChecksum(hex: checksum.description.uppercased()) == checksum)
        #expect(SchemaChecksum(hex: String(checksum.description.dropLast())) == nil)
        #expect(SchemaChecksum(hex: String(repeating: "g", count: 64)) == nil)
        #expect(SchemaChecksum(bytes: [1, 2, 3]) == nil)
    }
}

enum PinnedChecksums {
    static let person = "8739407399955905941c0672b9ef7cc8424253236ecee5adf4a35d85fc0ff03b"
    static let library = "e17438876f85c88d040a48cb62af8b5f5db091120b09d512c5f163e2ccd504c0"
    static let empty = "0a30e8ae14d65b583a0c8fa1b40e4d5746dc1a47846c17591461e17bb9d1bfa6"
}
