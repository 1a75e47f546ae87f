import Testing
import StrataSchema

@Suite struct SchemaValidationTests {
    @Test func theFixturesAreValid() throws {
        try Fixtures.library.validate()
        try Fixtures.person.validate()
        try Schema([]).validate()
    }

    @Test func duplicateEntities() {
        let schema = Schema([Entity("A"), Entity("B"), Entity("A")])
        #expect(throws: SchemaError.duplicateEntity("A")) { try schema.validate() }
    }

    @Test func duplicatePropertiesIncludingInheritedOnesAndRelationships() {
        let twice = Schema([Entity("A", attributes: [.int("x"), .string("x")])])
        #expect(throws: SchemaError.duplicateProperty(entity: "A", name: "x")) { try twice.validate() }
        let attributeAndRelationship = Schema([Entity("A", attributes: [.int("x")], relationships: [.toOne("x", destination: "A")])])
        #expect(throws: SchemaError.duplicateProperty(entity: "A", name: "x")) { try attributeAndRelationship.validate() }
        let redeclared = Fixtures.library.changing("Book") { $0.attributes.append(.date("createdAt")) }
        #expect(throws: SchemaError.duplicateProperty(entity: "Book", name: "createdAt")) { try redeclared.validate() }
    }

    @Test func invalidNames() {
        let long = String(repeating: "x", count: Schema.maximumNameLength + 1)
        #expect(throws: SchemaError.invalidName(what: "entity", name: "")) { try Schema([Entity("")]).validate() }
        #expect(throws: SchemaError.invalidName(what: "entity", name: long)) { try Schema([Entity(long)]).validate() }
        // 255 bytes exactly is fine, counted in UTF-8 bytes, not characters.
        try? Schema([Entity(String(repeating: "x", count: 255))]).validate()
        #expect(throws: SchemaError.self) { try Schema([Entity(String(repeating: "é", count: 128))]).validate() }
        #expect(throws: SchemaError.invalidName(what: "a property of entity A", name: "")) {
            try Schema([Entity("A", attributes: [.int("")])]).validate()
        }
        #expect(throws: SchemaError.self) { try Schema([Entity("A", attributes: [.codable("c", typeName: "")])]).validate() }
    }

    @Test func unknownParentAndCycles() {
        #expect(throws: SchemaError.unknownParent(entity: "A", parent: "Z")) { try Schema([Entity("A", parent: "Z")]).validate() }
        let cycle = Schema([Entity("Root"), Entity("A", parent: "B"), Entity("B", parent: "C"), Entity("C", parent: "A")])
        #expect(throws: SchemaError.inheritanceCycle(["A", "B", "C", "A"])) { try cycle.validate() }
        #expect(throws: SchemaError.inheritanceCycle(["A", "A"])) { try Schema([Entity("A", parent: "A")]).validate() }
        // A chain leading into a cycle reports the cycle only.
        let tail = Schema([Entity("D", parent: "A"), Entity("A", parent: "B"), Entity("B", parent: "A")])
        #expect(throws: SchemaError.inheritanceCycle(["A", "B", "A"])) { try tail.validate() }
    }

    @Test func relationshipsNeedTheirDestination() {
        let schema = Schema([Entity("A", relationships: [.toOne("b", destination: "B")])])
        #expect(throws: SchemaError.unknownDestination(entity: "A", relationship: "b", destination: "B")) { try schema.validate() }
    }

    @Test func inversesMustExistAndPointBack() throws {
        let missing = Fixtures.library.changing("Author") { $0.relationships = [] }
        #expect(throws: SchemaError.invalidInverse(entity: "Book", relationship: "authors", inverse: "books",
                                                   reason: "Author has no relationship named books")) { try missing.validate() }

        let elsewhere = Fixtures.library.changing("Author") { $0.relationships = [.toMany("books", destination: "Author")] }
        #expect(throws: SchemaError.invalidInverse(entity: "Book", relationship: "authors", inverse: "books",
                                                   reason: "Author.books refers to Author, not to Book")) { try elsewhere.validate() }

        let otherInverse = Schema([
            Entity("A", relationships: [.toOne("b", destination: "B", inverse: "a"), .toOne("c", destination: "B")]),
            Entity("B", relationships: [.toOne("a", destination: "A", inverse: "c")]),
        ])
        #expect(throws: SchemaError.invalidInverse(entity: "A", relationship: "b", inverse: "a",
                                                   reason: "B.a names c as its inverse, not b")) { try otherInverse.validate() }

        // One-sided inverses, inverses to an ancestor, inherited inverses and self-inverses are fine.
        try Schema([
            Entity("Base", relationships: [.toMany("tags", destination: "Tag", inverse: "items"), .toMany("labels", destination: "Tag")]),
            Entity("Note", parent: "Base", relationships: [.toOne("primary", destination: "Tag", inverse: "items")]),
            Entity("Tag", relationships: [.toMany("items", destination: "Base"), .toOne("featured", destination: "Note", inverse: "labels")]),
            Entity("Person", relationships: [.toMany("friends", destination: "Person", inverse: "friends")]),
        ]).validate()
    }

    @Test func defaultValuesMustHaveTheAttributesType() {
        let schema = Schema([Entity("A", attributes: [Attribute(name: "n", type: .int, defaultValue: .string("0"))])])
        #expect(throws: SchemaError.defaultValueTypeMismatch(entity: "A", attribute: "n", type: .int, value: .string("0"))) {
            try schema.validate()
        }
        let codable = Schema([Entity("A", attributes: [Attribute(name: "c", type: .codable(typeName: "X"), defaultValue: .data([]))])])
        #expect(throws: SchemaError.self) { try codable.validate() }
    }

    @Test func uniqueOptionalAttributesAreAllowed() throws {
        try Schema([Entity("A", attributes: [.string("email", isOptional: true, options: [.unique])])]).validate()
    }

    @Test func originalNamesMustBeUnambiguous() throws {
        let twice = Schema([Entity("A", attributes: [.int("x", originalName: "old"), .int("y", originalName: "old")])])
        #expect(throws: SchemaError.ambiguousOriginalName(entity: "A", originalName: "old")) { try twice.validate() }
        let clash = Schema([Entity("A", attributes: [.int("x"), .int("y", originalName: "x")])])
        #expect(throws: SchemaError.ambiguousOriginalName(entity: "A", originalName: "x")) { try clash.validate() }
        let acrossKinds = Schema([Entity("A", attributes: [.int("x", originalName: "o")], relationships: [.toOne("r", destination: "A", originalName: "o")])])
        #expect(throws: SchemaError.ambiguousOriginalName(entity: "A", originalName: "o")) { try acrossKinds.validate() }
        let entities = Schema([Entity("A"), Entity("B", originalName: "A")])
        #expect(throws: SchemaError.ambiguousOriginalName(entity: nil, originalName: "A")) { try entities.validate() }
        // Naming itself, or a name no longer used, is fine.
        try Schema([Entity("A", originalName: "A", attributes: [.int("x", originalName: "x"), .int("y", originalName: "z")])]).validate()
    }

    @Test func errorsDescribeThemselves() {
        #expect(SchemaError.inheritanceCycle(["A", "B", "A"]).description == "entities inherit from each other in a cycle: A → B → A")
        #expect(SchemaError.duplicateProperty(entity: "Book", name: "createdAt").description.contains("Book"))
        #expect(SchemaError.defaultValueTypeMismatch(entity: "A", attribute: "n", type: .int, value: .string("0")).description
            == "attribute A.n of type int has a default value of another type: string(\"0\")")
    }
}
