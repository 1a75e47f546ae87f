import Testing
import StrataSchema

@Suite struct SchemaDifferenceTests {
    static let base = Schema(version: .init(1, 0, 0), [
        Entity("Person", attributes: [
            .string("name"), .int("age", options: [.indexed]), .string("nickname", isOptional: true),
            .string("email"), .codable("address", typeName: "AddressV1"),
        ]),
        Entity("Pet", attributes: [.string("name")]),
    ])

    /// The differences between `base` and `changed`, as registered one after the other.
    static func differences(_ changed: Schema) throws -> [SchemaDifference] {
        let (first, firstID) = try SchemaCatalog().register(base)
        let (second, secondID) = try first.register(changed)
        let older = try #require(second.version(id: firstID)), newer = try #require(second.version(id: secondID))
        return newer.differences(from: older)
    }

    static func person(_ attributes: [Attribute], originalName: String? = nil, name: String = "Person") -> Schema {
        Schema(version: .init(2, 0, 0), [Entity(name, originalName: originalName, attributes: attributes), Entity("Pet", attributes: [.string("name")])])
    }

    static let baseAttributes: [Attribute] = [
        .string("name"), .int("age", options: [.indexed]), .string("nickname", isOptional: true),
        .string("email"), .codable("address", typeName: "AddressV1"),
    ]

    @Test func lightweightChangesAreRecognised() throws {
        var attributes = Self.baseAttributes
        attributes[3] = .string("mail", originalName: "email")                   // rename
        attributes[1] = .int("age")                                              // index removed
        attributes[2] = .string("nickname")                                      // … stays optional? no: becomes required
        attributes.append(.bool("isFavorite", default: false))                   // added with default
        attributes.append(.date("seenAt", isOptional: true))                     // added optional
        attributes[4] = .codable("address", typeName: "AddressV2")               // codable type name
        let found = try Self.differences(Self.person(attributes, originalName: "Human", name: "Person"))
        let byDescription = Dictionary(found.map { ($0.description, $0.isLightweight) }, uniquingKeysWith: { a, _ in a })
        #expect(byDescription["Person.email renamed mail"] == true)
        #expect(byDescription["Person.age is no longer indexed"] == true)
        #expect(byDescription["Person.isFavorite added (with a default)"] == true)
        #expect(byDescription["Person.seenAt added (optional)"] == true)
        #expect(byDescription["Person.address changed type from codable(AddressV1) to codable(AddressV2)"] == true)
        #expect(byDescription["Person.nickname became required (no default)"] == false)
        #expect(found.count == 6, "\(found.map(\.description))")
    }

    @Test func changesThatNeedAMigrationAreFlagged() throws {
        var attributes = Self.baseAttributes
        attributes[1] = .double("age", options: [.indexed])                     // type change
        attributes[0] = .string("name", options: [.unique])                     // unique added
        attributes.append(.string("code"))                                       // required, no default
        attributes.remove(at: 3)                                                 // email removed (lightweight)
        let found = try Self.differences(Self.person(attributes))
        let blocking = Set(found.filter { !$0.isLightweight }.map(\.description))
        #expect(blocking == ["Person.age changed type from int to double", "Person.name became unique",
                             "Person.code added (required, no default)"])
        #expect(found.contains { $0.description == "Person.email removed" && $0.isLightweight })
    }

    @Test func entitiesAddedRemovedAndRenamed() throws {
        let changed = Schema(version: .init(2, 0, 0), [
            Entity("Human", originalName: "Person", attributes: Self.baseAttributes),
            Entity("Toy", attributes: [.string("name")]),
        ])
        let found = Set(try Self.differences(changed).map(\.description))
        #expect(found == ["entity Person renamed Human", "entity Toy added", "entity Pet removed"])
    }

    @Test func relationshipAndParentChanges() throws {
        func schema(_ version: UInt32, pets: Relationship.Cardinality, petParent: String?) -> Schema {
            Schema(version: .init(version, 0, 0), [
                Entity("Person", attributes: [.string("name")], relationships: [Relationship(name: "pets", destination: "Pet", cardinality: pets)]),
                Entity("Pet", parent: petParent, attributes: [.string("nick")]),
            ])
        }
        func differences(_ from: Schema, _ to: Schema) throws -> [SchemaDifference] {
            let (first, firstID) = try SchemaCatalog().register(from)
            let (second, secondID) = try first.register(to)
            return try #require(second.version(id: secondID)).differences(from: try #require(second.version(id: firstID)))
        }
        // To-one → to-many reads every stored value (a one-id list): lightweight.
        let widened = try differences(schema(1, pets: .toOne, petParent: nil), schema(2, pets: .toMany, petParent: nil))
        #expect(widened.map(\.description) == ["Person.pets relationship changed (cardinality, delete rule, destination or inverse)"])
        #expect(widened.allSatisfy { $0.isLightweight })
        // To-many → to-one, and an existing entity as the new parent, need a migration (the
        // parent's records and Pet's were numbered separately; Pet's records lack the
        // inherited, required name).
        let narrowed = try differences(schema(1, pets: .toMany, petParent: nil), schema(2, pets: .toOne, petParent: "Person"))
        #expect(Set(narrowed.filter { !$0.isLightweight }.map(\.description))
            == ["Person.pets relationship changed from to-many to to-one", "Pet.name added (required, no default)",
                "entity Pet: parent none became Person (its new ancestor Person already existed: records of both would share one id space and may collide)"])
    }

    @Test func identicalShapesHaveNoDifferences() throws {
        let same = Schema(version: .init(1, 1, 0), Self.base.entities.reversed())
        #expect(try Self.differences(same).isEmpty)
    }
}
