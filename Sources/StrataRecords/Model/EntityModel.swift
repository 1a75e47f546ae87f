import StrataSchema

/// The entities of the bound catalog version arranged for saves and fetches: each entity's
/// inheritance family (itself and every entity below it), the root whose counter hands out
/// its record ids, and its relationships with their inverses, by stable id.
///
/// Immutable; built once when the store opens; safe to share between threads.
package struct EntityModel: Sendable {
    /// One entity.
    package struct EntityInfo: Sendable {
        package let name: String
        /// The root of the entity's hierarchy: the entity whose counter hands out its ids.
        let rootID: UInt32
        package let isAbstract: Bool
        /// This entity and every entity that inherits from it, ascending: where a fetch of the
        /// entity looks, and where a record id of the entity may be stored.
        let family: [UInt32]
        /// Every relationship, inherited ones first.
        let relationships: [CatalogRelationship]
        /// Every attribute and relationship property id, inherited ones included.
        package let propertyIDs: Set<UInt32>
    }

    private let entities: [UInt32: EntityInfo]
    private let relationships: [UInt32: CatalogRelationship]
    /// Relationship id → the relationship naming it as inverse, for pairs where only one side
    /// names the other.
    private let namedAsInverseBy: [UInt32: CatalogRelationship]

    package init(version: CatalogVersion) {
        var families: [UInt32: [UInt32]] = [:]
        for entity in version.entities {
            for ancestor in version.ancestry(ofEntity: entity.id) { families[ancestor.id, default: []].append(entity.id) }
        }
        var entities: [UInt32: EntityInfo] = [:]
        var relationships: [UInt32: CatalogRelationship] = [:]
        var namedAsInverseBy: [UInt32: CatalogRelationship] = [:]
        for entity in version.entities {
            let ancestry = version.ancestry(ofEntity: entity.id)
            let resolved = ancestry.flatMap(\.relationships)
            entities[entity.id] = EntityInfo(
                name: entity.name, rootID: ancestry.first?.id ?? entity.id, isAbstract: entity.isAbstract,
                family: (families[entity.id] ?? [entity.id]).sorted(), relationships: resolved,
                propertyIDs: Set(ancestry.flatMap { $0.attributes.map(\.id) + $0.relationships.map(\.id) }))
            for relationship in entity.relationships {
                relationships[relationship.id] = relationship
                if let inverse = relationship.inverseID, namedAsInverseBy[inverse] == nil { namedAsInverseBy[inverse] = relationship }
            }
        }
        self.entities = entities
        self.relationships = relationships
        self.namedAsInverseBy = namedAsInverseBy
    }

    package func info(_ entityID: UInt32) -> EntityInfo? { entities[entityID] }

    /// Whether any entity has a relationship (a write may then change records it was not
    /// given: inverses).
    package var hasRelationships: Bool { !relationships.isEmpty }

    /// The entity and its sub-entities; just the id for an unknown entity.
    package func family(of entityID: UInt32) -> [UInt32] { entities[entityID]?.family ?? [entityID] }

    /// The entity whose counter hands out `entityID`'s record ids.
    package func rootID(of entityID: UInt32) -> UInt32 { entities[entityID]?.rootID ?? entityID }

    package func name(of entityID: UInt32) -> String { entities[entityID]?.name ?? "entity \(entityID)" }

    package func relationships(of entityID: UInt32) -> [CatalogRelationship] { entities[entityID]?.relationships ?? [] }

    /// The relationship that refers back: the one `relationship` names, else one naming it.
    package func inverse(of relationship: CatalogRelationship) -> CatalogRelationship? {
        if let id = relationship.inverseID { return relationships[id] }
        return namedAsInverseBy[relationship.id]
    }
}
