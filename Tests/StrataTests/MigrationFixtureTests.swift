#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

// The V1 golden fixture store (issue 4): `Fixtures/migration-v1`, written once by
// `MigrationFixtureTests.writeFixtureWhenAsked` and never regenerated. Every lightweight change
// kind is exercised from it by a version of its own below; each test opens a copy.

/// The schema the fixture was written with. Person ↔ Note is an inverse pair (Person.notes,
/// to-many, delete rule nullify; Note.author, to-one); Tag.links is a to-one relationship a
/// later version makes to-many; Legacy is the entity later versions rename or remove.
enum FixtureV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var nickname: String?
        var email: String
        var notes: [RecordID<Note>]
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Legacy: PersistentRecord, Equatable {
        static var entityName: String { "Legacy" }
        var code: Int
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

/// The fixture's records, computed from their index (their record id: each entity's ids are
/// 1...count, in insertion order).
enum FixtureData {
    static let personCount = 200, noteCount = 150, legacyCount = 50, tagCount = 40
    static let givenNames = ["Zoë", "Øyvind", "Łukasz", "Søren", "Ångström", "李雷", "Дмитрий", "José", "Ἀθηνᾶ", "Ünal 😀"]

    static func name(_ i: Int) -> String { "\(givenNames[i % givenNames.count]) \(i)" }
    static func age(_ i: Int) -> Int { (i * 7) % 90 }
    static func nickname(_ i: Int) -> String? { i % 3 == 0 ? "nick\(i)·ü" : nil }
    static func email(_ i: Int) -> String { "p\(i)@exämple.org" }
    /// Note j's author: persons 1...60 write two or three notes each, every tenth note has none.
    static func author(ofNote j: Int) -> Int? { j % 10 == 0 ? nil : (j * 7) % 60 + 1 }
    static func notes(ofPerson i: Int) -> [Int] { (1...noteCount).filter { author(ofNote: $0) == i } }
    static func text(_ j: Int) -> String { "Note \(j) — ñ" + String(repeating: "ß", count: j % 5) }
    /// Legacy k's code: negative, zero and positive values, and both extremes of `Int`.
    static func code(_ k: Int) -> Int { k == 1 ? .min : k == legacyCount ? .max : k * k - 100 }
    static func label(_ t: Int) -> String { "tag-\(t)-ç" }
    /// Tag t's note: every fourth tag has none.
    static func link(ofTag t: Int) -> Int? { t % 4 == 0 ? nil : (t * 11) % noteCount + 1 }

    static var people: [FixtureV1.Person] {
        (1...personCount).map { i in
            FixtureV1.Person(name: name(i), age: age(i), nickname: nickname(i), email: email(i),
                             notes: notes(ofPerson: i).map { RecordID(rawValue: UInt64($0)) })
        }
    }
    static var notes: [FixtureV1.Note] {
        (1...noteCount).map { j in FixtureV1.Note(text: text(j), author: author(ofNote: j).map { RecordID(rawValue: UInt64($0)) }) }
    }
    static var legacies: [FixtureV1.Legacy] { (1...legacyCount).map { FixtureV1.Legacy(code: code($0)) } }
    static var tags: [FixtureV1.Tag] {
        (1...tagCount).map { t in FixtureV1.Tag(label: label(t), links: link(ofTag: t).map { RecordID(rawValue: UInt64($0)) }) }
    }
}

/// The same identifier as another record type's (a relationship's value across versions).
func sameID<Old, New>(_ id: RecordID<Old>) -> RecordID<New> { RecordID(rawValue: id.rawValue) }
func sameIDs<Old, New>(_ ids: [RecordID<Old>]) -> [RecordID<New>] { ids.map(sameID) }

/// The files directly in `folder`, by name, with their bytes.
func folderContents(_ folder: String) throws -> [String: [UInt8]] {
    struct ReadError: Error { let path: String }
    guard let directory = opendir(folder) else { throw ReadError(path: folder) }
    defer { closedir(directory) }
    var files: [String: [UInt8]] = [:]
    while let entry = readdir(directory) {
        let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
        guard name != ".", name != ".." else { continue }
        guard let input = fopen(folder + "/" + name, "rb") else { throw ReadError(path: folder + "/" + name) }
        defer { fclose(input) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&buffer, 1, buffer.count, input)
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        files[name] = bytes
    }
    return files
}

@Suite struct MigrationFixtureTests {
    static let fixture = RecordFixtureTests.fixtures + "/migration-v1"

    /// Writes the V1 fixture when STRATA_WRITE_MIGRATION_FIXTURE names an empty folder; does
    /// nothing otherwise. Used once: the fixture is committed and never regenerated.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_MIGRATION_FIXTURE").map({ String(cString: $0) }) else { return }
        try #require(try folderContents(target).isEmpty, "\(target) is not an empty folder")
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 64 << 10
        let store = try Store(at: target, schema: FixtureV1.self, migrationPlan: nil, configuration: configuration)
        let context = Context(store)
        // People without notes first; each note names its author, and the save fills Person.notes (the inverse).
        for person in FixtureData.people {
            try context.insert(FixtureV1.Person(name: person.name, age: person.age, nickname: person.nickname, email: person.email, notes: []))
        }
        for note in FixtureData.notes { try context.insert(note) }
        for legacy in FixtureData.legacies { try context.insert(legacy) }
        for tag in FixtureData.tags { try context.insert(tag) }
        try context.save()
        try store.close()
    }

    /// A copy of the fixture in a temporary folder, removed after `body`.
    static func withFixtureCopy(_ body: (String) throws -> Void) throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try copyFolder(fixture, to: folder)
        try body(folder)
    }

    /// Every record of `Record`'s entity, in id order: ids 1...expected.count and exactly `expected`.
    static func expectRecords<Record: PersistentRecord & Equatable>(_ context: Context, _ expected: [Record],
                                                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fetched = try context.fetch(FetchDescriptor<Record>())
        #expect(fetched.map(\.id.rawValue) == Array(1...UInt64(expected.count)), "\(Record.self) ids", sourceLocation: sourceLocation)
        #expect(fetched.count == expected.count, "\(Record.self) count", sourceLocation: sourceLocation)
        for (found, wanted) in zip(fetched, expected) where found.record != wanted {
            Issue.record("\(Record.self)#\(found.id.rawValue): \(found.record) != \(wanted)", sourceLocation: sourceLocation)
        }
    }

    /// The fixture as committed, read with the schema it was written with (no migration).
    @Test func fixtureHoldsTheV1Records() throws {
        try Self.withFixtureCopy { folder in
            let store = try Store(at: folder, schema: FixtureV1.self)
            let context = Context(store)
            try Self.expectRecords(context, FixtureData.people)
            try Self.expectRecords(context, FixtureData.notes)
            try Self.expectRecords(context, FixtureData.legacies)
            try Self.expectRecords(context, FixtureData.tags)
            // Spot values, written out: non-ASCII strings and the Int extremes.
            #expect(try context.record(for: RecordID<FixtureV1.Person>(rawValue: 9))
                    == FixtureV1.Person(name: "Ünal 😀 9", age: 63, nickname: "nick9·ü", email: "p9@exämple.org",
                                        notes: [RecordID(rawValue: 44), RecordID(rawValue: 104)]))
            #expect(try context.record(for: RecordID<FixtureV1.Legacy>(rawValue: 1))?.code == Int.min)
            #expect(try context.record(for: RecordID<FixtureV1.Legacy>(rawValue: 50))?.code == Int.max)
            #expect(try store.indexedRecords(FixtureV1.Person.self, attribute: "age", range: .equal(to: .int(0))).map(\.id.rawValue)
                    == [90, 180])
            try store.close()
        }
    }
}

// MARK: Versions 2 (and 3), one per change kind, each from FixtureV1

/// Lightweight: Person.score added with a default (7), Person.phone added optional.
enum FixtureV2Added: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var attributeDefaults: [String: Value] { ["score": 7] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var nickname: String?
        var email: String
        var notes: [RecordID<Note>]
        var score: Int
        var phone: String?
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

/// Lightweight: Person.nickname removed.
enum FixtureV2Removed: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var email: String
        var notes: [RecordID<Note>]
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

/// Lightweight from FixtureV2Removed: Person.nickname added again, exactly as V1 declared it
/// (String?), and Person.phone added optional (without it V3 would have V1's shape: a
/// duplicate checksum in the plan).
enum FixtureV3Readded: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var nickname: String?
        var email: String
        var notes: [RecordID<Note>]
        var phone: String?
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

/// Lightweight: Person.email renamed emailAddress through originalAttributeNames.
enum FixtureV2RenamedAttribute: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var originalAttributeNames: [String: String] { ["emailAddress": "email"] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var nickname: String?
        var emailAddress: String
        var notes: [RecordID<Note>]
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

/// Lightweight: entity Legacy renamed Archive through originalEntityName (its type renamed too).
enum FixtureV2RenamedEntity: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [FixtureV1.Person.self, FixtureV1.Note.self, Archive.self, FixtureV1.Tag.self] }
    struct Archive: PersistentRecord, Equatable {
        static var entityName: String { "Archive" }
        static var originalEntityName: String? { "Legacy" }
        var code: Int
    }
}

/// Lightweight: entity Label added.
enum FixtureV2AddedEntity: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] {
        [FixtureV1.Person.self, FixtureV1.Note.self, FixtureV1.Legacy.self, FixtureV1.Tag.self, Label.self]
    }
    struct Label: PersistentRecord, Equatable {
        static var entityName: String { "Label" }
        var title: String
        var weight: Double?
    }
}

/// Lightweight: entity Legacy removed.
enum FixtureV2RemovedEntity: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [FixtureV1.Person.self, FixtureV1.Note.self, FixtureV1.Tag.self] }
}

/// Lightweight: Tag.links to-one → to-many; Person.notes delete rule nullify → cascade.
enum FixtureV2Relationships: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author", deleteRule: .cascade)] }
        var name: String
        var age: Int
        var nickname: String?
        var email: String
        var notes: [RecordID<Note>]
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: [RecordID<Note>]
    }
}

/// Lightweight: Note adopts a new parent entity Entry, which declares `text` (Entry.text
/// takes over the id of V1's Note.text, so every stored text reads through the parent).
enum FixtureV2Inheritance: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Entry.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var nickname: String?
        var email: String
        var notes: [RecordID<Note>]
    }
    struct Entry: PersistentRecord, Equatable {
        static var entityName: String { "Entry" }
        var text: String
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var parentRecordType: (any PersistentRecord.Type)? { Entry.self }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

/// Lightweight: Legacy.code (an Int) becomes `Code`, a wrapper that encodes as one single
/// Int, and Tag.label (a String) becomes `Label`, a wrapper of one single String: the stored
/// plain values are their single-value encodings.
enum FixtureV2Codable: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [FixtureV1.Person.self, FixtureV1.Note.self, Legacy.self, Tag.self] }
    /// An Int stored as one single value.
    struct Code: Codable, Hashable {
        var value: Int
        init(value: Int) { self.value = value }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }
    /// A String stored as one single value.
    struct Label: Codable, Hashable {
        var text: String
        init(text: String) { self.text = text }
        init(from decoder: any Decoder) throws { text = try decoder.singleValueContainer().decode(String.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
    }
    struct Legacy: PersistentRecord, Equatable {
        static var entityName: String { "Legacy" }
        var code: Code
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: Label
        var links: RecordID<FixtureV1.Note>?
    }
}

/// Not lightweight: Legacy.code (an Int) becomes a keyed struct, which a single stored Int can
/// never decode as (its synthesized `init(from:)` asks for a keyed container).
enum FixtureV2CodableKeyed: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [FixtureV1.Person.self, FixtureV1.Note.self, Legacy.self, FixtureV1.Tag.self] }
    struct Code: Codable, Hashable {
        var value: Int
    }
    struct Legacy: PersistentRecord, Equatable {
        static var entityName: String { "Legacy" }
        var code: Code
    }
}

/// Custom (a transform): Person.nameLength added, required without a default, computed from name.
enum FixtureV2Backfill: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Person.self, Note.self, FixtureV1.Legacy.self, Tag.self] }
    struct Person: PersistentRecord, Equatable {
        static var entityName: String { "Person" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed]] }
        static var relationshipRules: [String: RelationshipRule] { ["notes": RelationshipRule(inverse: "author")] }
        var name: String
        var age: Int
        var nickname: String?
        var email: String
        var notes: [RecordID<Note>]
        var nameLength: Int
    }
    struct Note: PersistentRecord, Equatable {
        static var entityName: String { "Note" }
        static var relationshipRules: [String: RelationshipRule] { ["author": RelationshipRule(inverse: "notes")] }
        var text: String
        var author: RecordID<Person>?
    }
    struct Tag: PersistentRecord, Equatable {
        static var entityName: String { "Tag" }
        var label: String
        var links: RecordID<Note>?
    }
}

// MARK: Plans

/// V1, then `To` with no stage: the automatic lightweight path.
enum AutomaticStep<To: VersionedSchema>: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FixtureV1.self, To.self] }
    static var stages: [MigrationStage] { [] }
}

/// V1, then `To` through a declared lightweight stage.
enum DeclaredStep<To: VersionedSchema>: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FixtureV1.self, To.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: FixtureV1.self, toVersion: To.self)] }
}

typealias FixtureAddedPlan = AutomaticStep<FixtureV2Added>
typealias FixtureRemovedPlan = AutomaticStep<FixtureV2Removed>
enum FixtureReaddedPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FixtureV1.self, FixtureV2Removed.self, FixtureV3Readded.self] }
    static var stages: [MigrationStage] { [] }
}
typealias FixtureRenamedAttributePlan = AutomaticStep<FixtureV2RenamedAttribute>
typealias FixtureRenamedAttributeDeclaredPlan = DeclaredStep<FixtureV2RenamedAttribute>
typealias FixtureRenamedEntityPlan = AutomaticStep<FixtureV2RenamedEntity>
typealias FixtureAddedEntityPlan = AutomaticStep<FixtureV2AddedEntity>
typealias FixtureRemovedEntityPlan = AutomaticStep<FixtureV2RemovedEntity>
typealias FixtureRelationshipsPlan = AutomaticStep<FixtureV2Relationships>
typealias FixtureRelationshipsDeclaredPlan = DeclaredStep<FixtureV2Relationships>
typealias FixtureInheritancePlan = AutomaticStep<FixtureV2Inheritance>
typealias FixtureInheritanceDeclaredPlan = DeclaredStep<FixtureV2Inheritance>
typealias FixtureCodablePlan = AutomaticStep<FixtureV2Codable>
typealias FixtureCodableDeclaredPlan = DeclaredStep<FixtureV2Codable>
typealias FixtureCodableKeyedPlan = AutomaticStep<FixtureV2CodableKeyed>
typealias FixtureCodableKeyedDeclaredPlan = DeclaredStep<FixtureV2CodableKeyed>
enum FixtureBackfillPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FixtureV1.self, FixtureV2Backfill.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: FixtureV1.self, toVersion: FixtureV2Backfill.self, transforms: [
            .map(FixtureV1.Person.self, to: FixtureV2Backfill.Person.self) { old in
                FixtureV2Backfill.Person(name: old.name, age: old.age, nickname: old.nickname, email: old.email,
                                         notes: sameIDs(old.notes), nameLength: old.name.count)
            },
        ], batchSize: 64, willMigrate: nil, didMigrate: nil)]
    }
}

// MARK: Tests

extension MigrationFixtureTests {
    /// What a lightweight step may add to the store's files: the new catalog version, the
    /// store root and a checkpoint, never the record pages again (the fixture's records take
    /// about 12 KiB of frames; rewriting them shows in `backfillingADerivedFieldRewritesPeopleOnly`).
    static let lightweightGrowthLimit = 4 * 1024

    /// Opens a copy of the fixture with `schema` and `plan`, runs `check` (reads only) on the
    /// migrated store, closes it, and checks the files grew by less than
    /// `lightweightGrowthLimit`; then runs `afterwards` (writes) on the store opened again
    /// with `schema` and no plan (migrated for good).
    static func migrateCopy(to schema: any VersionedSchema.Type, plan: any SchemaMigrationPlan.Type,
                            sourceLocation: SourceLocation = #_sourceLocation, _ check: (Store, Context) throws -> Void,
                            afterwards: ((Store, Context) throws -> Void)? = nil) throws {
        try withFixtureCopy { folder in
            let before = folderBytes(folder)
            do {
                let store = try Store(at: folder, schema: schema, migrationPlan: plan)
                try check(store, Context(store))
                try store.close()
            }
            let grown = folderBytes(folder) - before
            print("MigrationFixtureTests: \(schema) via \(plan) grew the store by \(grown) bytes")
            #expect(grown < lightweightGrowthLimit, "opening wrote \(grown) bytes", sourceLocation: sourceLocation)
            if let afterwards {
                let store = try Store(at: folder, schema: schema)
                try afterwards(store, Context(store))
                try store.close()
            }
        }
    }

    /// The unchanged entities of the fixture, read with `schema`'s types.
    static func expectNotesAndTags<Note: PersistentRecord & Equatable, Tag: PersistentRecord & Equatable>(
        _ context: Context, note: ((String, UInt64?)) -> Note, tag: ((String, UInt64?)) -> Tag,
        sourceLocation: SourceLocation = #_sourceLocation) throws
    {
        try expectRecords(context, FixtureData.notes.map { note(($0.text, $0.author?.rawValue)) }, sourceLocation: sourceLocation)
        try expectRecords(context, FixtureData.tags.map { tag(($0.label, $0.links?.rawValue)) }, sourceLocation: sourceLocation)
    }

    @Test func addedAttributesReadTheirDefaultAndNil() throws {
        typealias V2 = FixtureV2Added
        try Self.migrateCopy(to: V2.self, plan: FixtureAddedPlan.self) { store, context in
            try Self.expectRecords(context, FixtureData.people.map {
                V2.Person(name: $0.name, age: $0.age, nickname: $0.nickname, email: $0.email, notes: sameIDs($0.notes), score: 7, phone: nil)
            })
            try Self.expectNotesAndTags(context, note: { V2.Note(text: $0.0, author: $0.1.map { RecordID(rawValue: $0) }) },
                                        tag: { V2.Tag(label: $0.0, links: $0.1.map { RecordID(rawValue: $0) }) })
            try Self.expectRecords(context, FixtureData.legacies)
            #expect(try context.fetchCount(FetchDescriptor<V2.Person>(predicate: #Predicate { $0.score == 7 })) == 200)
            #expect(try context.fetchCount(FetchDescriptor<V2.Person>(predicate: #Predicate { $0.phone == nil })) == 200)
        } afterwards: { store, context in
            // The new attributes hold what is written to them, the others keep the default and nil.
            let id = RecordID<V2.Person>(rawValue: 3)
            var person = try #require(try context.record(for: id))
            person.score = 42
            person.phone = "+47 ☎ 3"
            try context.update(id, to: person)
            try context.save()
            let saved = Context(store)
            #expect(try saved.record(for: id) == person)
            #expect(try saved.record(for: RecordID<V2.Person>(rawValue: 4))?.score == 7)
            #expect(try saved.record(for: RecordID<V2.Person>(rawValue: 4))?.phone == nil)
        }
    }

    @Test func removedAttributeLeavesTheOtherValuesIntact() throws {
        typealias V2 = FixtureV2Removed
        try Self.migrateCopy(to: V2.self, plan: FixtureRemovedPlan.self) { _, context in
            try Self.expectRecords(context, FixtureData.people.map {
                V2.Person(name: $0.name, age: $0.age, email: $0.email, notes: sameIDs($0.notes))
            })
            try Self.expectNotesAndTags(context, note: { V2.Note(text: $0.0, author: $0.1.map { RecordID(rawValue: $0) }) },
                                        tag: { V2.Tag(label: $0.0, links: $0.1.map { RecordID(rawValue: $0) }) })
            try Self.expectRecords(context, FixtureData.legacies)
        }
    }

    /// An attribute removed by V2 and declared again by V3 (same name, same type) is a new,
    /// empty attribute: the values V1 stored under the old one stay unread (matching is
    /// against the newest catalog version only; SchemaCatalog.register). Straight from V1 to
    /// V3, and in two openings (V2, then V3), every nickname reads nil — including the 66 V1
    /// records that had one.
    @Test(arguments: [false, true]) func reAddedAttributeDoesNotResurrectOldValues(inTwoOpenings: Bool) throws {
        typealias V3 = FixtureV3Readded
        try Self.withFixtureCopy { folder in
            let before = folderBytes(folder)
            if inTwoOpenings {
                let v2 = try Store(at: folder, schema: FixtureV2Removed.self, migrationPlan: FixtureRemovedPlan.self)
                try v2.close()
            }
            let store = try Store(at: folder, schema: V3.self, migrationPlan: FixtureReaddedPlan.self)
            let context = Context(store)
            #expect(FixtureData.people.filter { $0.nickname != nil }.count == 66)
            try Self.expectRecords(context, FixtureData.people.map {
                V3.Person(name: $0.name, age: $0.age, nickname: nil, email: $0.email, notes: sameIDs($0.notes), phone: nil)
            })
            #expect(try context.fetchCount(FetchDescriptor<V3.Person>(predicate: #Predicate { $0.nickname != nil })) == 0)
            try Self.expectNotesAndTags(context, note: { V3.Note(text: $0.0, author: $0.1.map { RecordID(rawValue: $0) }) },
                                        tag: { V3.Tag(label: $0.0, links: $0.1.map { RecordID(rawValue: $0) }) })
            try Self.expectRecords(context, FixtureData.legacies)
            try store.close()
            // Two lightweight steps: two catalog versions.
            let grown = folderBytes(folder) - before
            print("MigrationFixtureTests: FixtureV3Readded (two openings: \(inTwoOpenings)) grew the store by \(grown) bytes")
            #expect(grown < 2 * Self.lightweightGrowthLimit, "opening wrote \(grown) bytes")

            // The re-added attribute stores new values.
            let reopened = try Store(at: folder, schema: V3.self)
            let writer = Context(reopened)
            let id = RecordID<V3.Person>(rawValue: 3)
            var person = try #require(try writer.record(for: id))
            person.nickname = "again"
            try writer.update(id, to: person)
            try writer.save()
            #expect(try Context(reopened).record(for: id)?.nickname == "again")
            #expect(try Context(reopened).record(for: RecordID<V3.Person>(rawValue: 6))?.nickname == nil)
            try reopened.close()
        }
    }

    @Test(arguments: [false, true]) func renamedAttributeKeepsItsValues(declaredStage: Bool) throws {
        typealias V2 = FixtureV2RenamedAttribute
        let plan: any SchemaMigrationPlan.Type = declaredStage ? FixtureRenamedAttributeDeclaredPlan.self : FixtureRenamedAttributePlan.self
        try Self.migrateCopy(to: V2.self, plan: plan) { store, context in
            try Self.expectRecords(context, FixtureData.people.map {
                V2.Person(name: $0.name, age: $0.age, nickname: $0.nickname, emailAddress: $0.email, notes: sameIDs($0.notes))
            })
            try Self.expectNotesAndTags(context, note: { V2.Note(text: $0.0, author: $0.1.map { RecordID(rawValue: $0) }) },
                                        tag: { V2.Tag(label: $0.0, links: $0.1.map { RecordID(rawValue: $0) }) })
            try Self.expectRecords(context, FixtureData.legacies)
            let match = try context.fetch(FetchDescriptor<V2.Person>(predicate: #Predicate { $0.emailAddress == "p9@exämple.org" }))
            #expect(match.map(\.id.rawValue) == [9])
            // The index on age came through the step.
            #expect(try store.indexedRecords(V2.Person.self, attribute: "age", range: .equal(to: .int(0))).map(\.id.rawValue) == [90, 180])
        }
        // lint: the declared stage is the automatic path's.
        #expect(try FixtureRenamedAttributeDeclaredPlan.lint()
                == [.redundantStage(stage: 0, from: "FixtureV1 (1.0.0)", to: "FixtureV2RenamedAttribute (2.0.0)")])
        #expect(try FixtureRenamedAttributePlan.lint().isEmpty)
    }

    @Test func renamedEntityKeepsItsRecords() throws {
        typealias V2 = FixtureV2RenamedEntity
        try Self.migrateCopy(to: V2.self, plan: FixtureRenamedEntityPlan.self) { store, context in
            try Self.expectRecords(context, FixtureData.legacies.map { V2.Archive(code: $0.code) })
            try Self.expectRecords(context, FixtureData.people)
            try Self.expectRecords(context, FixtureData.notes)
            try Self.expectRecords(context, FixtureData.tags)
            #expect(throws: StrataError.unknownEntity("Legacy")) { try context.fetch(FetchDescriptor<FixtureV1.Legacy>()) }
        } afterwards: { _, context in
            // The entity's identifier counter came along too.
            let next = try context.insert(V2.Archive(code: -1))
            try context.save()
            #expect(next.rawValue == 51)
        }
    }

    @Test func addedEntityStartsEmptyAndTheOthersAreIntact() throws {
        typealias V2 = FixtureV2AddedEntity
        try Self.migrateCopy(to: V2.self, plan: FixtureAddedEntityPlan.self) { store, context in
            #expect(try context.fetchCount(FetchDescriptor<V2.Label>()) == 0)
            try Self.expectRecords(context, FixtureData.people)
            try Self.expectRecords(context, FixtureData.notes)
            try Self.expectRecords(context, FixtureData.legacies)
            try Self.expectRecords(context, FixtureData.tags)
        } afterwards: { store, context in
            let id = try context.insert(V2.Label(title: "première", weight: 0.5))
            try context.save()
            #expect(id.rawValue == 1)
            #expect(try Context(store).fetch(FetchDescriptor<V2.Label>()).map(\.record) == [V2.Label(title: "première", weight: 0.5)])
        }
    }

    @Test func removedEntityIsNoLongerReadAndTheOthersAreIntact() throws {
        typealias V2 = FixtureV2RemovedEntity
        try Self.migrateCopy(to: V2.self, plan: FixtureRemovedEntityPlan.self) { _, context in
            try Self.expectRecords(context, FixtureData.people)
            try Self.expectRecords(context, FixtureData.notes)
            try Self.expectRecords(context, FixtureData.tags)
            #expect(throws: StrataError.unknownEntity("Legacy")) { try context.fetch(FetchDescriptor<FixtureV1.Legacy>()) }
        }
    }

    /// Tag.links (to-one → to-many) reads each stored id as a one-element list and nil as
    /// empty; Person.notes' new delete rule (cascade) applies to the old records, where V1's
    /// (nullify) kept the notes.
    @Test(arguments: [false, true]) func relationshipBecomesToManyAndChangesItsDeleteRule(declaredStage: Bool) throws {
        typealias V2 = FixtureV2Relationships
        let plan: any SchemaMigrationPlan.Type = declaredStage ? FixtureRelationshipsDeclaredPlan.self : FixtureRelationshipsPlan.self
        let person = 9, notesOfPerson = FixtureData.notes(ofPerson: 9)
        #expect(notesOfPerson == [44, 104])
        try Self.migrateCopy(to: V2.self, plan: plan) { store, context in
            try Self.expectRecords(context, FixtureData.people.map {
                V2.Person(name: $0.name, age: $0.age, nickname: $0.nickname, email: $0.email, notes: sameIDs($0.notes))
            })
            try Self.expectRecords(context, FixtureData.notes.map { V2.Note(text: $0.text, author: $0.author.map { RecordID(rawValue: $0.rawValue) }) })
            try Self.expectRecords(context, FixtureData.tags.map { V2.Tag(label: $0.label, links: $0.links.map { [RecordID(rawValue: $0.rawValue)] } ?? []) })
            #expect(try context.record(for: RecordID<V2.Tag>(rawValue: 1))?.links.map(\.rawValue) == [12])
            #expect(try context.record(for: RecordID<V2.Tag>(rawValue: 4))?.links == [])
            try Self.expectRecords(context, FixtureData.legacies)
        } afterwards: { store, context in
            // Several notes per tag now.
            let tag = RecordID<V2.Tag>(rawValue: 1)
            try context.update(tag, to: V2.Tag(label: FixtureData.label(1), links: [RecordID(rawValue: 12), RecordID(rawValue: 150)]))
            // Cascade: deleting person 9 deletes notes 44 and 104.
            try context.delete(RecordID<V2.Person>(rawValue: UInt64(person)))
            try context.save()
            let after = Context(store)
            #expect(try after.record(for: tag)?.links.map(\.rawValue) == [12, 150])
            let remaining = try after.fetch(FetchDescriptor<V2.Note>())
            #expect(remaining.map(\.id.rawValue) == (1...150).filter { !notesOfPerson.contains($0) }.map(UInt64.init))
            #expect(try after.fetchCount(FetchDescriptor<V2.Person>()) == 199)
        }
        // The same deletion under V1's rule (nullify) keeps the notes, their author cleared.
        try Self.withFixtureCopy { folder in
            let store = try Store(at: folder, schema: FixtureV1.self)
            let context = Context(store)
            try context.delete(RecordID<FixtureV1.Person>(rawValue: UInt64(person)))
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<FixtureV1.Note>()) == 150)
            #expect(try notesOfPerson.map { try context.record(for: RecordID<FixtureV1.Note>(rawValue: UInt64($0)))?.author } == [nil, nil])
            try store.close()
        }
    }
}

// MARK: Adopting inheritance, making an attribute codable (and what stays refused), and a custom backfill

extension MigrationFixtureTests {
    /// Opens a copy of the fixture with `schema` three ways — a plan with no stage, a plan
    /// declaring a lightweight stage, no plan — and checks each is refused with exactly the
    /// given error and that the store's files are byte for byte what they were (opening adds
    /// only the empty advisory LOCK file); the V1 app still reads every record afterwards.
    static func expectRefused(_ schema: any VersionedSchema.Type, automatic: any SchemaMigrationPlan.Type,
                              declared: any SchemaMigrationPlan.Type, unreachable: MigrationPlanError,
                              notLightweight: MigrationPlanError, mismatch: StrataError,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        try withFixtureCopy { folder in
            let before = try folderContents(folder)
            #expect(before == (try folderContents(fixture)), sourceLocation: sourceLocation)
            #expect(throws: unreachable, sourceLocation: sourceLocation) { try Store(at: folder, schema: schema, migrationPlan: automatic) }
            #expect(throws: notLightweight, sourceLocation: sourceLocation) { try Store(at: folder, schema: schema, migrationPlan: declared) }
            #expect(throws: mismatch, sourceLocation: sourceLocation) { try Store(at: folder, schema: schema) }
            let after = try folderContents(folder)
            // A writable open makes `LOCK` and the space reserve (zeros, invariant 33) even when
            // it is then refused; neither holds data.
            #expect(after.filter { $0.key != "LOCK" && $0.key != "reserve" } == before, "the store's files changed", sourceLocation: sourceLocation)
            #expect(Set(after.keys).subtracting(before.keys).subtracting(["LOCK", "reserve"]).isEmpty, sourceLocation: sourceLocation)
            #expect(after["LOCK", default: []] == [], sourceLocation: sourceLocation)

            let store = try Store(at: folder, schema: FixtureV1.self)
            let context = Context(store)
            try expectRecords(context, FixtureData.people, sourceLocation: sourceLocation)
            try expectRecords(context, FixtureData.notes, sourceLocation: sourceLocation)
            try expectRecords(context, FixtureData.legacies, sourceLocation: sourceLocation)
            try expectRecords(context, FixtureData.tags, sourceLocation: sourceLocation)
            try store.close()
        }
    }

    /// Adopting inheritance (Note gets the new parent Entry, which declares `text`) is
    /// lightweight: Entry.text takes over Note.text's id, so no record is rewritten and every
    /// value survives; fetching Entry returns the notes (kept in Note's own tree); and records
    /// inserted afterwards — notes and entries, which now share Entry's id counter — get ids
    /// above every existing one of the hierarchy.
    @Test(arguments: [false, true]) func adoptingInheritanceKeepsEveryValue(declared: Bool) throws {
        typealias V2 = FixtureV2Inheritance
        try Self.migrateCopy(to: V2.self, plan: declared ? FixtureInheritanceDeclaredPlan.self : FixtureInheritancePlan.self) { store, context in
            try Self.expectRecords(context, FixtureData.people.map {
                V2.Person(name: $0.name, age: $0.age, nickname: $0.nickname, email: $0.email, notes: sameIDs($0.notes))
            })
            try Self.expectNotesAndTags(context, note: { V2.Note(text: $0.0, author: $0.1.map { RecordID(rawValue: $0) }) },
                                        tag: { V2.Tag(label: $0.0, links: $0.1.map { RecordID(rawValue: $0) }) })
            try Self.expectRecords(context, FixtureData.legacies)
            // The parent type sees the child's records, with the inherited value.
            try Self.expectRecords(context, FixtureData.notes.map { V2.Entry(text: $0.text) })
            #expect(try context.fetchCount(FetchDescriptor<V2.Entry>(predicate: #Predicate { $0.text == "Note 1 — ñß" })) == 1)
            #expect(try context.record(for: RecordID<V2.Entry>(rawValue: 7))?.text == FixtureData.text(7))
        } afterwards: { store, context in
            let entry = try context.insert(V2.Entry(text: "an entry"))
            let note = try context.insert(V2.Note(text: "a note", author: RecordID(rawValue: 3)))
            try context.save()
            #expect(entry.rawValue > UInt64(FixtureData.noteCount), "entry id \(entry.rawValue) collides with a note")
            #expect(note.rawValue > UInt64(FixtureData.noteCount), "note id \(note.rawValue) collides with a note")
            #expect(entry.rawValue != note.rawValue)
            let fresh = Context(store)
            let all = try fresh.fetch(FetchDescriptor<V2.Entry>())
            #expect(all.count == FixtureData.noteCount + 2)
            #expect(Set(all.map(\.id.rawValue)).count == all.count, "ids repeat within the hierarchy")
            #expect(try fresh.record(for: RecordID<V2.Entry>(rawValue: entry.rawValue))?.text == "an entry")
            #expect(try fresh.record(for: note)?.author?.rawValue == 3)
            #expect(try fresh.record(for: RecordID<V2.Person>(rawValue: 3))?.notes.contains(note) == true)
        }
        // Reopened again (ids come from the stored counters): still no collision.
        try Self.withFixtureCopy { folder in
            do { let store = try Store(at: folder, schema: V2.self); try store.close() }
            for round in 0..<2 {
                let store = try Store(at: folder, schema: V2.self)
                let context = Context(store)
                let id = try context.insert(V2.Entry(text: "round \(round)"))
                try context.save()
                #expect(id.rawValue == UInt64(FixtureData.noteCount + 1 + round))
                try store.close()
            }
        }
    }

    /// Making an attribute codable is lightweight when the codable type decodes from a single
    /// value of the stored type: Legacy.code (Int → Code) and Tag.label (String → Label) keep
    /// their ids, nothing is rewritten, and every old value — Int.min and Int.max included —
    /// reads as the codable type; new writes store the codable form (JSON) and read back.
    @Test(arguments: [false, true]) func makingAnAttributeCodableKeepsEveryValue(declared: Bool) throws {
        typealias V2 = FixtureV2Codable
        try Self.migrateCopy(to: V2.self, plan: declared ? FixtureCodableDeclaredPlan.self : FixtureCodablePlan.self) { _, context in
            try Self.expectRecords(context, FixtureData.people)
            try Self.expectRecords(context, FixtureData.notes)
            try Self.expectRecords(context, FixtureData.legacies.map { V2.Legacy(code: V2.Code(value: $0.code)) })
            try Self.expectRecords(context, FixtureData.tags.map { V2.Tag(label: V2.Label(text: $0.label), links: $0.links) })
            #expect(try context.record(for: RecordID<V2.Legacy>(rawValue: 1))?.code.value == Int.min)
            #expect(try context.record(for: RecordID<V2.Legacy>(rawValue: 50))?.code.value == Int.max)
        } afterwards: { store, context in
            let id = RecordID<V2.Legacy>(rawValue: 2)
            try context.update(id, to: V2.Legacy(code: V2.Code(value: 12_345)))
            let added = try context.insert(V2.Tag(label: V2.Label(text: "new-ß"), links: nil))
            try context.save()
            let fresh = Context(store)
            #expect(try fresh.record(for: id)?.code.value == 12_345)
            #expect(try fresh.record(for: RecordID<V2.Legacy>(rawValue: 3))?.code.value == FixtureData.code(3))
            #expect(try fresh.record(for: added)?.label.text == "new-ß")
            #expect(try fresh.fetchCount(FetchDescriptor<V2.Tag>()) == FixtureData.tagCount + 1)
        }
    }

    /// A codable type that can never be made from a stored scalar — a keyed struct from an Int
    /// — stays refused, before any record is read: Legacy.code gets a new id at registration,
    /// and the difference is a type change (Docs/Migrations.md).
    @Test func makingAnAttributeAKeyedCodableIsRefusedAndChangesNothing() throws {
        let v1 = "FixtureV1 (1.0.0)", v2 = "FixtureV2CodableKeyed (2.0.0)"
        let blocking = "[needs migration] Legacy.code changed type from int to codable(Code) (Code does not decode from a single int value)"
            + " — fix: stored values do not read as the new type: rewrite Legacy in a custom stage with a RecordTransform of Legacy (Docs/Migrations.md)"
        try Self.expectRefused(FixtureV2CodableKeyed.self, automatic: FixtureCodableKeyedPlan.self, declared: FixtureCodableKeyedDeclaredPlan.self,
                               unreachable: .unreachableVersion(schema: v2, from: v1, differences: [blocking]),
                               notLightweight: .stageNotLightweight(stage: 0, from: v1, to: v2, differences: [blocking]),
                               mismatch: .schemaMismatch(stored: "1.0.0", current: "2.0.0", differences: [blocking]))
    }

    /// The seeds' custom case: Person.nameLength (required, no default) computed from name by
    /// a transform. Every person is rewritten with its identifier; the other entities are
    /// read as they were.
    @Test func backfillingADerivedFieldRewritesPeopleOnly() throws {
        typealias V2 = FixtureV2Backfill
        #expect(throws: MigrationPlanError.self) { try FixtureV1ToBackfillWithoutStage.validate() }
        try Self.withFixtureCopy { folder in
            let before = folderBytes(folder)
            do {
                let store = try Store(at: folder, schema: V2.self, migrationPlan: FixtureBackfillPlan.self)
                let context = Context(store)
                let expected = FixtureData.people.map {
                    V2.Person(name: $0.name, age: $0.age, nickname: $0.nickname, email: $0.email, notes: sameIDs($0.notes), nameLength: $0.name.count)
                }
                try Self.expectRecords(context, expected)
                // Written out: graphemes, not bytes or scalars.
                #expect(try context.record(for: RecordID<V2.Person>(rawValue: 9))?.nameLength == 8)      // "Ünal 😀 9"
                #expect(try context.record(for: RecordID<V2.Person>(rawValue: 5))?.nameLength == 4)      // "李雷 5"
                #expect(try context.record(for: RecordID<V2.Person>(rawValue: 200))?.nameLength == 7)    // "Zoë 200"
                #expect(try context.fetchCount(FetchDescriptor<V2.Person>(predicate: #Predicate { $0.nameLength == 8 }))
                        == FixtureData.people.filter { $0.name.count == 8 }.count)
                try Self.expectNotesAndTags(context, note: { V2.Note(text: $0.0, author: $0.1.map { RecordID(rawValue: $0) }) },
                                            tag: { V2.Tag(label: $0.0, links: $0.1.map { RecordID(rawValue: $0) }) })
                try Self.expectRecords(context, FixtureData.legacies)
                #expect(try store.indexedRecords(V2.Person.self, attribute: "age", range: .equal(to: .int(0))).map(\.id.rawValue) == [90, 180])
                try store.close()
            }
            // Records were rewritten: more than a lightweight step may write.
            let grown = folderBytes(folder) - before
            print("MigrationFixtureTests: FixtureV2Backfill via FixtureBackfillPlan grew the store by \(grown) bytes")
            #expect(grown > Self.lightweightGrowthLimit)
            // Migrated for good: the new version opens without a plan.
            let store = try Store(at: folder, schema: V2.self)
            #expect(try Context(store).fetchCount(FetchDescriptor<V2.Person>()) == 200)
            try store.close()
        }
    }
}

typealias FixtureV1ToBackfillWithoutStage = AutomaticStep<FixtureV2Backfill>
