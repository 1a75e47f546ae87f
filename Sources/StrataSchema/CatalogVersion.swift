/// One schema version recorded in a store's catalog: its shape with stable ids, and the
/// checksum of that shape. Pages name the version they were written with by ``id``.
package struct CatalogVersion: Sendable, Hashable {
    /// Stable version id: ≥ 1, in registration order, never reused. Stored in page headers.
    package var id: UInt32
    /// The version number the app gave the schema.
    package var schemaVersion: Schema.Version
    /// The checksum of ``shape``.
    package var checksum: SchemaChecksum
    /// Entities sorted by id.
    package var entities: [CatalogEntity]

    package init(id: UInt32, schemaVersion: Schema.Version, checksum: SchemaChecksum, entities: [CatalogEntity]) {
        self.id = id
        self.schemaVersion = schemaVersion
        self.checksum = checksum
        self.entities = entities
    }

    package func entity(id: UInt32) -> CatalogEntity? { entities.first { $0.id == id } }
    package func entity(named name: String) -> CatalogEntity? { entities.first { $0.name == name } }

    /// The entity with id `id` and its ancestors, root first. Empty when `id` is unknown; stops
    /// at a missing parent and is bounded by the entity count, so it never loops.
    package func ancestry(ofEntity id: UInt32) -> [CatalogEntity] {
        var chain: [CatalogEntity] = []
        var next: UInt32? = id
        while let current = next, chain.count < entities.count, let entity = entity(id: current) {
            chain.append(entity)
            next = entity.parentID
        }
        return chain.reversed()
    }

    /// An entity and every entity below it (its inheritance family), by id; empty when `id`
    /// is unknown.
    package func family(ofEntity id: UInt32) -> [UInt32] {
        entities.filter { entity in ancestry(ofEntity: entity.id).contains { $0.id == id } }.map(\.id)
    }

    /// All attributes of an entity, inherited first (as ``Schema/resolvedAttributes(of:)``).
    package func resolvedAttributes(ofEntity id: UInt32) -> [CatalogAttribute] {
        ancestry(ofEntity: id).flatMap(\.attributes)
    }

    /// All relationships of an entity, inherited first.
    package func resolvedRelationships(ofEntity id: UInt32) -> [CatalogRelationship] {
        ancestry(ofEntity: id).flatMap(\.relationships)
    }

    /// Attribute name → property id for an entity, inherited attributes included: the map
    /// ``RecordEncoder`` needs to encode a typed record of this version.
    package func attributeIDs(ofEntity id: UInt32) -> [String: UInt32] {
        Dictionary(resolvedAttributes(ofEntity: id).map { ($0.name, $0.id) }, uniquingKeysWith: { first, _ in first })
    }

    /// The schema this version records (without originalNames; ``Schema/version`` is
    /// ``schemaVersion``). Its checksum is ``checksum`` for every catalog that decodes. An id
    /// with no entity or relationship (never the case in a decoded catalog) becomes the empty
    /// name, which no valid schema has, so the shape then fails ``Schema/validate()``.
    package var shape: Schema {
        let names = Dictionary(entities.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        let relationshipNames = Dictionary(entities.flatMap(\.relationships).map { ($0.id, $0.name) },
                                           uniquingKeysWith: { first, _ in first })
        return Schema(version: schemaVersion, entities.map { entity in
            Entity(entity.name, parent: entity.parentID.flatMap { names[$0] ?? "" }, isAbstract: entity.isAbstract,
                   attributes: entity.attributes.map(\.attribute),
                   relationships: entity.relationships.map { relationship in
                       Relationship(name: relationship.name, destination: names[relationship.destinationID] ?? "",
                                    inverse: relationship.inverseID.map { relationshipNames[$0] ?? "" },
                                    cardinality: relationship.cardinality, deleteRule: relationship.deleteRule,
                                    isOptional: relationship.isOptional)
                   })
        })
    }
}
