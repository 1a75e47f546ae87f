import FoundationEssentials
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
