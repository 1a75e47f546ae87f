#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataFormat
@testable import StrataSchema

/// A String-backed enum: decodes from one single String.
private enum Status: String, Codable, Hashable, CaseIterable { case active, archived }

/// A single-value wrapper of an Int.
private struct Celsius: Codable, Hashable {
    var value: Int
    init(value: Int) { self.value = value }
    init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// A wrapper of a wrapper: decodes from one single Int, through `Celsius`.
private struct Reading: Codable, Hashable {
    var celsius: Celsius
    init(from decoder: any Decoder) throws { celsius = try decoder.singleValueContainer().decode(Celsius.self) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(celsius)
    }
}

/// A keyed struct (synthesized `Codable`): never decodes from a single value.
private struct Point: Codable, Hashable { var x: Int }

/// Plain attribute → codable (registration keeps the id when the type may decode from the
/// stored value), and entities adopting a new parent (the parent takes over the ids).
@Suite struct LightweightAdoptionTests {
    /// The catalog after registering `old` then `new`, and the two versions.
    static func register(_ old: Schema, _ new: Schema) throws -> (SchemaCatalog, CatalogVersion, CatalogVersion) {
        let (first, firstID) = try SchemaCatalog().register(old)
        let (second, secondID) = try first.register(new)
        try second.checkInvariants()
        let decoded = try SchemaCatalog.decode(second.encoded())
        #expect(decoded == second)
        return (second, try #require(second.version(id: firstID)), try #require(second.version(id: secondID)))
    }

    static func codable(_ name: String, probing type: Any.Type, isOptional: Bool = false, options: Attribute.Options = []) -> Attribute {
        var attribute = Attribute(name: name, type: .codable(typeName: String(describing: type)), isOptional: isOptional, options: options)
        attribute.codableProbe = CodableProbe.probe(type)
        return attribute
    }

    // MARK: The probe

    @Test func probeTellsSingleValueTypesFromStructuredOnes() {
        #expect(CodableProbe.probe(Status.self).form == .singleValue(.string))
        #expect(CodableProbe.probe(Celsius.self).form == .singleValue(.int))
        #expect(CodableProbe.probe(Reading.self).form == .singleValue(.int))
        #expect(CodableProbe.probe(Optional<Celsius>.self).form == .singleValue(.int))
        #expect(CodableProbe.probe(Point.self).form == .structured("a keyed container"))
        #expect(CodableProbe.probe([String].self).form == .structured("an unkeyed container"))
        #expect(CodableProbe.probe(String.self).form == .unknown)
        #expect(CodableProbe.probe(Celsius.self).mayDecode(fromPlain: .int))
        #expect(!CodableProbe.probe(Celsius.self).mayDecode(fromPlain: .string))
        #expect(!CodableProbe.probe(Point.self).mayDecode(fromPlain: .int))
        #expect(CodableProbe.unknown.mayDecode(fromPlain: .date))
        // Not part of the shape: a derived attribute equals a hand-written one.
        #expect(Self.codable("t", probing: Celsius.self) == Attribute(name: "t", type: .codable(typeName: "Celsius")))
    }

    @Test func entityDerivationProbesCodableProperties() throws {
        struct Sensor: PersistentRecord { var reading: Celsius; var status: Status?; var point: Point; var name: String }
        let entity = try Sensor.entity()
        #expect(entity.attribute(named: "reading")?.codableProbe.form == .singleValue(.int))
        #expect(entity.attribute(named: "status")?.codableProbe.form == .singleValue(.string))
        #expect(entity.attribute(named: "point")?.codableProbe.form == .structured("a keyed container"))
        #expect(entity.attribute(named: "name")?.codableProbe.form == .unknown)
    }

    // MARK: Making an attribute codable

    @Test func plainAttributeMadeCodableKeepsItsIDAndIsLightweight() throws {
        let old = Schema(version: .init(1, 0, 0), [Entity("Sensor", attributes: [.int("reading"), .string("status")])])
        let new = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [
            Self.codable("reading", probing: Celsius.self), Self.codable("status", probing: Status.self),
        ])])
        let (catalog, v1, v2) = try Self.register(old, new)
        let before = try #require(v1.entity(named: "Sensor")), after = try #require(v2.entity(named: "Sensor"))
        #expect(after.attribute(named: "reading")?.id == before.attribute(named: "reading")?.id)
        #expect(after.attribute(named: "status")?.id == before.attribute(named: "status")?.id)
        let differences = v2.differences(from: v1)
        #expect(differences.map(\.description) == [
            "Sensor.reading became codable(Celsius), its stored int values read as its single-value encoding",
            "Sensor.status became codable(Status), its stored string values read as its single-value encoding",
        ])
        #expect(differences.allSatisfy { $0.isLightweight })
        // An app of the older version cannot read the new JSON values: not for read-only access.
        #expect(!differences.contains { $0.isReadableByOlderVersion })
        // The catalog now needs format 2; one without the change stays format 1, byte for byte.
        #expect(catalog.encoded()[8] == 2)
        #expect(try SchemaCatalog().register(old).catalog.encoded()[8] == 1)
    }

    @Test func hanDWrittenCodableTypeKeepsItsID() throws {
        // No probe (a schema written by hand): kept, and each stored value is tried when read.
        let old = Schema(version: .init(1, 0, 0), [Entity("Sensor", attributes: [.int("reading")])])
        let new = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [.codable("reading", typeName: "Celsius")])])
        let (_, v1, v2) = try Self.register(old, new)
        #expect(v2.entity(named: "Sensor")?.attribute(named: "reading")?.id == v1.entity(named: "Sensor")?.attribute(named: "reading")?.id)
        #expect(v2.differences(from: v1).allSatisfy { $0.isLightweight })
    }

    @Test func codableTypeThatNeverDecodesFromTheStoredValueIsRefused() throws {
        let old = Schema(version: .init(1, 0, 0), [Entity("Sensor", attributes: [.int("reading"), .string("place")])])
        let new = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [
            Self.codable("reading", probing: Point.self), Self.codable("place", probing: Celsius.self),
        ])])
        let (catalog, v1, v2) = try Self.register(old, new)
        #expect(v2.entity(named: "Sensor")?.attribute(named: "reading")?.id != v1.entity(named: "Sensor")?.attribute(named: "reading")?.id)
        let differences = v2.differences(from: v1)
        #expect(differences.map(\.description) == [
            "Sensor.place changed type from string to codable(Celsius) (Celsius does not decode from a single string value)",
            "Sensor.reading changed type from int to codable(Point) (Point does not decode from a single int value)",
        ])
        #expect(!differences.contains { $0.isLightweight })
        #expect(catalog.encoded()[8] == 1)
    }

    @Test func indexedOrUniqueAttributeMadeCodableIsNotLightweight() throws {
        let old = Schema(version: .init(1, 0, 0), [Entity("Sensor", attributes: [.int("reading", options: [.indexed])])])
        let new = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [Self.codable("reading", probing: Celsius.self, options: [.indexed])])])
        let (_, v1, v2) = try Self.register(old, new)
        let differences = v2.differences(from: v1)
        #expect(differences.count == 1)
        #expect(differences.first?.isLightweight == false)
        // Dropping the index in the same step makes it lightweight.
        let unindexed = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [Self.codable("reading", probing: Celsius.self)])])
        let (_, w1, w2) = try Self.register(old, unindexed)
        #expect(w2.differences(from: w1).allSatisfy { $0.isLightweight }, "\(w2.differences(from: w1).map(\.description))")
    }

    @Test func codableMadePlainAgainIsNotLightweight() throws {
        let old = Schema(version: .init(1, 0, 0), [Entity("Sensor", attributes: [Self.codable("reading", probing: Celsius.self)])])
        let new = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [.int("reading")])])
        let (_, v1, v2) = try Self.register(old, new)
        #expect(v2.entity(named: "Sensor")?.attribute(named: "reading")?.id != v1.entity(named: "Sensor")?.attribute(named: "reading")?.id)
        #expect(v2.differences(from: v1).map(\.description) == ["Sensor.reading changed type from codable(Celsius) to int"])
        #expect(v2.differences(from: v1).first?.isLightweight == false)
    }

    @Test func formatOneCatalogMayNotChangeAnAttributesTypeTag() throws {
        let old = Schema(version: .init(1, 0, 0), [Entity("Sensor", attributes: [.int("reading")])])
        let new = Schema(version: .init(2, 0, 0), [Entity("Sensor", attributes: [Self.codable("reading", probing: Celsius.self)])])
        let (catalog, _, _) = try Self.register(old, new)
        var bytes = catalog.encoded()
        bytes[8] = 1  // claims format 1: the plain → codable change is then invalid
        #expect(throws: FormatError.self) { try SchemaCatalog.decode(bytes) }
        var plain = try SchemaCatalog().register(old).catalog.encoded()
        plain[8] = 2  // format 2 without a change that needs it: not the canonical bytes
        #expect(throws: FormatError.self) { try SchemaCatalog.decode(plain) }
    }

    // MARK: Adopting a parent

    static let notes = Schema(version: .init(1, 0, 0), [
        Entity("Note", attributes: [.string("text"), .date("createdAt")]),
        Entity("Memo", attributes: [.string("text")]),
    ])

    @Test func newParentTakesOverTheAdoptingEntitysIDs() throws {
        let new = Schema(version: .init(2, 0, 0), [
            Entity("Entry", attributes: [.string("text"), .string("tag", isOptional: true)]),
            Entity("Note", parent: "Entry", attributes: [.date("createdAt")]),
            Entity("Memo", attributes: [.string("text")]),
        ])
        let (catalog, v1, v2) = try Self.register(Self.notes, new)
        let oldNote = try #require(v1.entity(named: "Note")), entry = try #require(v2.entity(named: "Entry"))
        #expect(entry.attribute(named: "text")?.id == oldNote.attribute(named: "text")?.id)
        #expect(v2.entity(named: "Note")?.attribute(named: "createdAt")?.id == oldNote.attribute(named: "createdAt")?.id)
        #expect(v2.attributeIDs(ofEntity: oldNote.id)["text"] == oldNote.attribute(named: "text")?.id)
        let differences = v2.differences(from: v1)
        #expect(Set(differences.map(\.description)) == ["entity Entry added", "entity Note: parent none became Entry", "Note.tag added (optional)"])
        #expect(differences.allSatisfy { $0.isLightweight })
        #expect(catalog.encoded()[8] == 2)
    }

    @Test func inheritedRequiredAttributeWithoutDefaultIsNotLightweight() throws {
        let new = Schema(version: .init(2, 0, 0), [
            Entity("Entry", attributes: [.string("text"), .int("rank")]),
            Entity("Note", parent: "Entry", attributes: [.date("createdAt")]),
            Entity("Memo", attributes: [.string("text")]),
        ])
        let (_, v1, v2) = try Self.register(Self.notes, new)
        let blocking = v2.differences(from: v1).filter { !$0.isLightweight }.map(\.description)
        #expect(blocking == ["Note.rank added (required, no default)"])
    }

    @Test func twoExistingEntitiesAdoptingOneParentAreNotLightweight() throws {
        // Note and Memo hold `text` under different ids and number their records separately.
        let new = Schema(version: .init(2, 0, 0), [
            Entity("Entry", attributes: [.string("text")]),
            Entity("Note", parent: "Entry", attributes: [.date("createdAt")]),
            Entity("Memo", parent: "Entry"),
        ])
        let (_, v1, v2) = try Self.register(Self.notes, new)
        let entry = try #require(v2.entity(named: "Entry"))
        #expect(entry.attribute(named: "text")?.id != v1.entity(named: "Note")?.attribute(named: "text")?.id)
        #expect(entry.attribute(named: "text")?.id != v1.entity(named: "Memo")?.attribute(named: "text")?.id)
        let blocking = Set(v2.differences(from: v1).filter { !$0.isLightweight }.map(\.description))
        #expect(blocking == [
            "entity Memo: parent none became Entry (Note joins the same hierarchy from another one: their record ids were handed out separately and may collide)",
            "entity Note: parent none became Entry (Memo joins the same hierarchy from another one: their record ids were handed out separately and may collide)",
            "Memo.text added (required, no default)", "Note.text added (required, no default)",
        ])
        #expect(v2.differences(from: v1).contains { $0.description == "Note.text removed" })
    }

    @Test func adoptingAnExistingEntityOrLeavingAParentIsNotLightweight() throws {
        // Memo (existing, with records) becomes Note's parent.
        let existingParent = Schema(version: .init(2, 0, 0), [
            Entity("Note", parent: "Memo", attributes: [.date("createdAt")]),
            Entity("Memo", attributes: [.string("text")]),
        ])
        let (_, v1, v2) = try Self.register(Self.notes, existingParent)
        let blocking = v2.differences(from: v1).filter { !$0.isLightweight }.map(\.description)
        #expect(blocking.contains("entity Note: parent none became Memo (its new ancestor Memo already existed: records of both would share one id space and may collide)"),
                "\(blocking)")
        // And back: Note leaves its parent.
        let (_, w1, w2) = try Self.register(Self.notes, Schema(version: .init(2, 0, 0), [
            Entity("Entry", attributes: [.string("text")]), Entity("Note", parent: "Entry", attributes: [.date("createdAt")]),
        ]))
        _ = w1
        let (catalog, _) = try SchemaCatalog().register(Self.notes)
        let third = try catalog.register(Schema(version: .init(2, 0, 0), [
            Entity("Entry", attributes: [.string("text")]), Entity("Note", parent: "Entry", attributes: [.date("createdAt")]),
        ])).catalog.register(Schema(version: .init(3, 0, 0), [
            Entity("Entry", attributes: [.string("text")]), Entity("Note", attributes: [.string("text"), .date("createdAt")]),
        ]))
        let v3 = try #require(third.catalog.version(id: third.versionID))
        let leaving = v3.differences(from: w2).filter { !$0.isLightweight }.map(\.description)
        #expect(leaving.contains { $0.hasPrefix("entity Note: parent Entry became none (it had a parent before") }, "\(leaving)")
    }

    @Test func adoptingAParentThroughDerivedTypesKeepsTheRelationship() throws {
        let old = Schema(version: .init(1, 0, 0), [
            Entity("Person", attributes: [.string("name")]),
            Entity("Note", attributes: [.string("text")],
                   relationships: [Relationship(name: "author", destination: "Person", cardinality: .toOne, isOptional: true)]),
        ])
        let new = Schema(version: .init(2, 0, 0), [
            Entity("Person", attributes: [.string("name")]),
            Entity("Entry", attributes: [.string("text")],
                   relationships: [Relationship(name: "author", destination: "Person", cardinality: .toOne, isOptional: true)]),
            Entity("Note", parent: "Entry"),
        ])
        let (_, v1, v2) = try Self.register(old, new)
        let oldNote = try #require(v1.entity(named: "Note"))
        #expect(v2.entity(named: "Entry")?.relationship(named: "author")?.id == oldNote.relationship(named: "author")?.id)
        #expect(v2.differences(from: v1).allSatisfy { $0.isLightweight }, "\(v2.differences(from: v1).map(\.description))")
    }
}
