#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema

/// `Sample` customized by key path instead of by name (the compiler checks the key paths).
struct KeyPathSample: PersistentRecord, Equatable {
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
    var address: Sample.Address
    var status: Sample.Status
    var tags: [String]
    var note: String?
    var rating: Double?
    var lastSeen: Date?
    var backup: Sample.Address?
    var titleLength: Int { title.count }

    static var attributeOptionsByKeyPath: [PartialKeyPath<KeyPathSample>: Attribute.Options] { [\.title: [.indexed], \.id: [.unique]] }
    static var attributeDefaultsByKeyPath: [PartialKeyPath<KeyPathSample>: Value] { [\.count: 0, \.flag: true, \.note: "none"] }
    static var originalAttributeNamesByKeyPath: [PartialKeyPath<KeyPathSample>: String] { [\.title: "name", \.backup: "spare"] }
}

/// A computed property is no attribute.
struct ComputedKeyPath: PersistentRecord {
    var title: String
    var length: Int { title.count }
    static var attributeOptionsByKeyPath: [PartialKeyPath<ComputedKeyPath>: Attribute.Options] { [\.length: [.indexed]] }
}

struct Owner: PersistentRecord {
    var name: String
    var pets: [RecordID<Pet>]
    var best: RecordID<Pet>?
    static var relationshipRulesByKeyPath: [PartialKeyPath<Owner>: RelationshipRule] {
        [\.pets: RelationshipRule(inverse: "owner", deleteRule: .cascade)]
    }
}

struct Pet: PersistentRecord {
    var name: String
    var owner: RecordID<Owner>?
    static var relationshipRulesByKeyPath: [PartialKeyPath<Pet>: RelationshipRule] { [\.owner: RelationshipRule(inverse: "pets")] }
}

@Suite struct KeyPathCustomizationTests {
    @Test func keyPathsNameTheSameAttributesAsStrings() throws {
        let entity = try KeyPathSample.entity()
        func attribute(_ name: String) -> Attribute? { entity.attributes.first { $0.name == name } }
        #expect(attribute("title")?.options == [.indexed])
        #expect(attribute("title")?.originalName == "name")
        #expect(attribute("id")?.options == [.unique])
        #expect(attribute("count")?.defaultValue == 0)
        #expect(attribute("flag")?.defaultValue == true)
        #expect(attribute("note")?.defaultValue == "none")
        #expect(attribute("backup")?.originalName == "spare")
        // Nothing else is customized.
        #expect(entity.attributes.filter { !$0.options.isEmpty }.map(\.name).sorted() == ["id", "title"])
        #expect(entity.attributes.filter { !$0.defaultValue.isNull }.map(\.name).sorted() == ["count", "flag", "note"])
        // The same as Sample's string-keyed options where both declare them.
        let strings = try Sample.entity()
        for name in ["title", "id"] {
            #expect(attribute(name)?.options == strings.attributes.first { $0.name == name }?.options)
        }
    }

    @Test func relationshipRulesByKeyPath() throws {
        let owner = try Owner.entity(), pet = try Pet.entity()
        #expect(owner.relationships.first { $0.name == "pets" }?.inverse == "owner")
        #expect(owner.relationships.first { $0.name == "pets" }?.deleteRule == .cascade)
        #expect(owner.relationships.first { $0.name == "best" }?.inverse == nil)
        #expect(pet.relationships.first { $0.name == "owner" }?.inverse == "pets")
    }

    @Test func aComputedPropertyIsRefusedWithTheFix() {
        #expect {
            _ = try ComputedKeyPath.entity()
        } throws: { error in
            guard case RecordCodingError.cannotDeriveEntity(let type, let reason) = error else { return false }
            return type == "ComputedKeyPath" && reason.contains("not a stored property") && reason.contains("by the property's name")
        }
    }
}
