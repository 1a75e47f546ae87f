#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema

@Suite struct SchemaModelTests {
    @Test func staticConstructorsFillEveryField() {
        let age = Attribute.int("age", options: [.indexed], default: 0)
        #expect(age == Attribute(name: "age", type: .int, isOptional: false, defaultValue: .int(0), options: [.indexed]))
        let note = Attribute.string("note", isOptional: true, originalName: "text")
        #expect(note.type == .string && note.isOptional && note.defaultValue == .null && note.originalName == "text")
        let created = Attribute.date("createdAt", default: Date(timeIntervalSinceReferenceDate: 5))
        #expect(created.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 5)))
        #expect(Attribute.codable("address", typeName: "Address").type == .codable(typeName: "Address"))
        #expect(Attribute.uuid("id", options: [.unique]).options == [.unique])
        #expect(Attribute.data("blob", default: [1, 2]).defaultValue == .data([1, 2]))
        #expect(Attribute.double("score", default: 0.5).defaultValue == .double(0.5))
        #expect(Attribute.bool("flag", default: true).defaultValue == .bool(true))

        let books = Relationship.toMany("books", destination: "Book", inverse: "author", deleteRule: .cascade)
        #expect(books.cardinality == .toMany && books.deleteRule == .cascade && books.isOptional && books.inverse == "author")
        #expect(Relationship.toOne("owner", destination: "Person").deleteRule == .nullify)
    }

    @Test func versionsOrderPrintAndParse() throws {
        #expect(Schema.Version(1, 0, 0).description == "1.0.0")
        #expect(Schema.Version(1, 2, 3) < Schema.Version(1, 10, 0))
        #expect(Schema.Version(2, 0, 0) > Schema.Version(1, 99, 99))
        #expect(Schema.Version(1, 0, 1) > Schema.Version(1, 0, 0))
        #expect(Schema.Version("4.5.6") == Schema.Version(4, 5, 6))
        for invalid in ["", "1", "1.2", "1.2.3.4", "1..3", "a.b.c", "-1.0.0", "1.0.4294967296", " 1.0.0", "١.٠.٠"] {
            #expect(Schema.Version(invalid) == nil, "\(invalid)")
        }
        let encoded = try JSONEncoder().encode([Schema.Version(1, 2, 0)])
        #expect(String(decoding: encoded, as: UTF8.self) == "[\"1.2.0\"]")
        #expect(try JSONDecoder().decode([Schema.Version].self, from: encoded) == [Schema.Version(1, 2, 0)])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Schema.Version].self, from: Data("[\"1.x\"]".utf8)) }
    }

    @Test func subEntitiesResolveInheritedAttributesRootFirst() throws {
        let schema = Fixtures.library
        #expect(try schema.resolvedAttributes(of: "Book").map(\.name)
            == ["id", "createdAt", "title", "pages", "rating", "cover", "isFavorite", "metadata"])
        #expect(try schema.resolvedAttributes(of: "Item").map(\.name) == ["id", "createdAt"])
        #expect(try schema.resolvedRelationships(of: "Book").map(\.name) == ["authors"])
        #expect(try schema.ancestry(of: "Book").map(\.name) == ["Item", "Book"])
        #expect(schema.entity("Book", isKindOf: "Item"))
        #expect(!schema.entity("Item", isKindOf: "Book"))
        #expect(!schema.entity("Nope", isKindOf: "Item"))
        #expect(throws: SchemaError.unknownEntity("Nope")) { try schema.resolvedAttributes(of: "Nope") }
    }

    @Test func resolvingAThreeLevelChain() throws {
        let schema = Schema([
            Entity("A", attributes: [.int("a")]),
            Entity("C", parent: "B", attributes: [.int("c")]),
            Entity("B", parent: "A", attributes: [.int("b")]),
        ])
        try schema.validate()
        #expect(try schema.resolvedAttributes(of: "C").map(\.name) == ["a", "b", "c"])
    }

    @Test func lookupsByName() {
        let book = Fixtures.library.entity(named: "Book")
        #expect(book?.parent == "Item")
        #expect(book?.attribute(named: "title")?.options == [.indexed])
        #expect(book?.attribute(named: "id") == nil)  // inherited: not an own attribute
        #expect(book?.relationship(named: "authors")?.destination == "Author")
        #expect(Fixtures.library.entity(named: "Magazine") == nil)
    }
}
