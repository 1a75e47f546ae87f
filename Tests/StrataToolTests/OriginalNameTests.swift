#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport
@testable import StrataToolCore
#if canImport(Glibc)
import Glibc
#endif

/// Original names in the catalog (format 3): `strata schema` shows how each rename was
/// declared; the golden store `Tests/StrataTests/Fixtures/renamed-catalog3`, written once by
/// `writeFixtureWhenAsked` and never regenerated, reads back.
@Suite struct OriginalNameTests {
    static let fixture = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/../StrataTests/Fixtures/renamed-catalog3"

    enum V1 {
        struct Shelf: PersistentRecord, Equatable {
            var label: String
            var books: [RecordID<Book>] = []
            static let relationshipRules = ["books": RelationshipRule(inverse: "shelf")]
        }

        struct Book: PersistentRecord, Equatable {
            var title: String
            var shelf: RecordID<Shelf>?
            static let relationshipRules = ["shelf": RelationshipRule(inverse: "books")]
        }
    }

    /// Version 2.0.0: Shelf renamed Bookcase, its label name, Book.title heading, and both
    /// sides of the relationship renamed, each through its original name.
    enum V2 {
        struct Bookcase: PersistentRecord, Equatable {
            var name: String
            var volumes: [RecordID<Book>] = []
            static var originalEntityName: String? { "Shelf" }
            static var originalAttributeNames: [String: String] { ["name": "label", "volumes": "books"] }
            static let relationshipRules = ["volumes": RelationshipRule(inverse: "bookcase")]
        }

        struct Book: PersistentRecord, Equatable {
            var heading: String
            var bookcase: RecordID<Bookcase>?
            static var originalAttributeNames: [String: String] { ["heading": "title", "bookcase": "shelf"] }
            static let relationshipRules = ["bookcase": RelationshipRule(inverse: "volumes")]
        }
    }

    static func openV2(_ folder: String) throws -> Store {
        try Store(at: folder, for: [V2.Bookcase.self, V2.Book.self], version: Schema.Version(2, 0, 0))
    }

    /// Writes a store through V1 (a shelf, two books), then opens it through V2 and adds a
    /// book: its catalog keeps V2's original names (format 3).
    static func write(_ folder: String) throws {
        let v1 = try Store(at: folder, for: [V1.Shelf.self, V1.Book.self])
        let context = Context(v1, author: "v1")
        let shelf = try context.insert(V1.Shelf(label: "Fiction"))
        try context.insert(V1.Book(title: "Dune", shelf: shelf))
        try context.insert(V1.Book(title: "Solaris", shelf: nil))
        try context.save()
        try v1.close()
        let v2 = try openV2(folder)
        let later = Context(v2, author: "v2")
        try later.insert(V2.Book(heading: "Emma", bookcase: RecordID(rawValue: 1)))
        try later.save()
        try v2.close()
    }

    /// Writes the fixture when STRATA_WRITE_CATALOG3_FIXTURE names an empty folder.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_CATALOG3_FIXTURE").map({ String(cString: $0) }) else { return }
        try Self.write(target)
    }

    @Test func schemaShowsEachDeclaredOriginalName() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.write(folder)
        let run = ToolTests.strata("schema", folder)
        #expect(run.status == .success, "\(run.errors)")
        let version2 = run.lines.drop { !$0.hasPrefix("version 2: 2.0.0") }
        #expect(Array(version2.dropFirst()) == [
            "  entity Bookcase (id 1): originally Shelf",
            "    attribute name (id 1): string, originally label",
            "    relationship volumes (id 2): to-many Book, inverse bookcase, delete rule nullify, optional, originally books",
            "  entity Book (id 2)",
            "    attribute heading (id 3): string, originally title",
            "    relationship bookcase (id 4): to-one Bookcase, inverse volumes, delete rule nullify, optional, originally shelf",
        ])
        // Version 1 declared none.
        #expect(!run.lines.prefix { !$0.hasPrefix("version 2") }.contains { $0.contains("originally") })
        let json = ToolTests.strata("schema", "--json", folder).output
        #expect(json.contains(#""originalName": "Shelf""#) && json.contains(#""originalName": "label""#))
        // An export carries them; the imported store's catalog is the same.
        try Data(ToolTests.strata("export", folder).output.utf8).write(to: URL(fileURLWithPath: folder + "/../export.jsonl"))
        #expect(ToolTests.strata("import", folder + "/../export.jsonl", folder + "-copy").status == .success)
        defer { removeDirectory(folder + "-copy") }
        #expect(ToolTests.strata("schema", "--json", folder + "-copy").output.replacing(folder + "-copy", with: "P")
            == json.replacing(folder, with: "P"))
    }

    @Test func theGoldenFormat3StoreReadsBack() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        copyFiles(from: Self.fixture, to: folder)
        let inspection = try StoreInspection(at: folder)
        let catalog = try #require(try inspection.catalog())
        inspection.close()
        #expect(catalog.formatVersionNeeded == 3)
        #expect(catalog.versions.map(\.schemaVersion) == [Schema.Version(1, 0, 0), Schema.Version(2, 0, 0)])
        #expect(catalog.versions[0].entities.allSatisfy { $0.originalName == nil && $0.attributes.allSatisfy { $0.originalName == nil } })
        let bookcase = try #require(catalog.versions[1].entity(named: "Bookcase"))
        #expect(bookcase.originalName == "Shelf" && bookcase.attributes.map(\.originalName) == ["label"])
        #expect(bookcase.relationships.map(\.originalName) == ["books"])
        #expect(ToolTests.strata("verify", folder).status == .success)
        let store = try Self.openV2(folder)
        defer { try? store.close() }
        let context = Context(store)
        #expect(try context.fetch(FetchDescriptor<V2.Book>()).map(\.record) == [
            V2.Book(heading: "Dune", bookcase: RecordID(rawValue: 1)), V2.Book(heading: "Solaris", bookcase: nil),
            V2.Book(heading: "Emma", bookcase: RecordID(rawValue: 1)),
        ])
        #expect(try context.fetch(FetchDescriptor<V2.Bookcase>()).map(\.record)
            == [V2.Bookcase(name: "Fiction", volumes: [RecordID(rawValue: 1), RecordID(rawValue: 3)])])
    }
}
