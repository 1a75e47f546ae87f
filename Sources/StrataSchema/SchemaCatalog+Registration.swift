extension SchemaCatalog {
    /// Records `schema` as the newest version, mapping it onto the newest version's ids.
    ///
    /// Matching, against the most recently registered version only (a name dropped by an
    /// intermediate version is gone; re-adding it later makes a new, empty attribute):
    /// - an entity keeps its id when its name, or else its `originalName`, names an entity of
    ///   the newest version;
    /// - an attribute keeps its id when its name, or else its `originalName`, names an
    ///   attribute of that matched entity *with the same storage type* (bool, int, …; a
    ///   codable attribute keeps its id when only its type name changes), or when a plain
    ///   attribute became codable and its type may decode from the stored plain value
    ///   (``CodableProbe/mayDecode(fromPlain:)``: old values are then read as the codable type's
    ///   single-value encoding). Any other changed type gets a new id: old values stay
    ///   readable through the old version, never misread as the new type;
    /// - an attribute (or relationship) of an entity new in this version takes over the id of
    ///   the same-named one of an existing entity that now inherits from it (*adopting* a new
    ///   parent), when every such adopting entity that had it holds it under one id and it
    ///   would keep its id there (same storage type, same destination); otherwise it gets a new
    ///   id (``CatalogVersion/differences(from:)`` then reports why adopting is not lightweight);
    /// - a relationship keeps its id the same way, when its destination is the same entity id;
    /// - everything else gets the next id of its space, in declaration order. Ids are never reused.
    ///
    /// Registering a schema whose checksum and version number equal the newest version's
    /// changes nothing and returns that version's id (opening a store again). Any other schema,
    /// even one with a known shape, becomes a new version.
    ///
    /// - Returns: The new catalog (store it) and the id of the version `schema` is registered as.
    /// - Throws: ``CatalogError/invalidSchema(_:)`` when `schema` fails validation;
    ///   ``CatalogError/identifiersExhausted(kind:)`` when an id space is used up.
    package func register(_ schema: Schema) throws(CatalogError) -> (catalog: SchemaCatalog, versionID: UInt32) {
        do { try schema.validate() } catch { throw .invalidSchema(error) }
        let checksum = schema.checksum
        if let latest, latest.checksum == checksum, latest.schemaVersion == schema.version {
            return (self, latest.id)
        }
        var allocation = Allocation(nextEntity: nextEntityID, nextProperty: nextPropertyID)

        // Entities first: relationships refer to their destinations by id.
        let previousEntities = latest?.entities ?? []
        var matched: [String: CatalogEntity] = [:]  // new entity name → the old entity it continues
        var entityIDs: [String: UInt32] = [:]
        for entity in schema.entities {
            let old = Self.match(entity.name, entity.originalName, in: previousEntities, name: \.name)
            let id = try allocation.entityID(keeping: old?.id)
            if id == old?.id { matched[entity.name] = old }
            entityIDs[entity.name] = id
        }
        var entities: [CatalogEntity] = []
        for entity in schema.entities {
            let adopters = matched[entity.name] == nil ? Self.adopters(of: entity.name, in: schema, matched: matched) : []
            entities.append(try Self.catalogEntity(entity, continuing: matched[entity.name], adoptedBy: adopters,
                                                   entityIDs: entityIDs, allocation: &allocation))
        }
        Self.resolveInverses(in: &entities, of: schema)

        var nextVersion = nextVersionID
        let version = CatalogVersion(id: try Self.allocate(&nextVersion, "version"), schemaVersion: schema.version,
                                     checksum: checksum, entities: entities.sorted { $0.id < $1.id })
        let catalog = SchemaCatalog(versions: versions + [version], nextVersionID: nextVersion,
                                    nextEntityID: allocation.nextEntity, nextPropertyID: allocation.nextProperty)
        return (catalog, version.id)
    }

    /// The catalog form of `entity`, its properties matched against `old` (the entity of the
    /// previous version it continues, if any) or, for an entity new in this version, against
    /// `adopters` (the previous versions of the existing entities that now inherit from it).
    /// Inverse ids are filled in later.
    private static func catalogEntity(_ entity: Entity, continuing old: CatalogEntity?, adoptedBy adopters: [CatalogEntity],
                                      entityIDs: [String: UInt32], allocation: inout Allocation) throws(CatalogError) -> CatalogEntity
    {
        var attributes: [CatalogAttribute] = []
        for attribute in entity.attributes {
            let previous: UInt32?
            if let old {
                previous = match(attribute.name, attribute.originalName, in: old.attributes, name: \.name)
                    .flatMap { keepsID($0, as: attribute) ? $0.id : nil }
            } else {
                previous = agreed(adopters.map { adopter in
                    match(attribute.name, attribute.originalName, in: adopter.attributes, name: \.name)
                        .flatMap { keepsID($0, as: attribute) ? $0.id : nil }
                })
            }
            attributes.append(CatalogAttribute(id: try allocation.propertyID(keeping: previous), attribute: attribute))
        }
        var relationships: [CatalogRelationship] = []
        for relationship in entity.relationships {
            let destinationID = entityIDs[relationship.destination] ?? 0  // validated: always present
            func previous(in candidates: [CatalogRelationship]) -> CatalogRelationship? {
                match(relationship.name, relationship.originalName, in: candidates, name: \.name)
                    .flatMap { $0.destinationID == destinationID ? $0 : nil }
            }
            let previousID = old.map { previous(in: $0.relationships)?.id } ?? agreed(adopters.map { previous(in: $0.relationships)?.id })
            relationships.append(CatalogRelationship(
                id: try allocation.propertyID(keeping: previousID), name: relationship.name, destinationID: destinationID,
                inverseID: nil, cardinality: relationship.cardinality, deleteRule: relationship.deleteRule,
                isOptional: relationship.isOptional, originalName: relationship.originalName))
        }
        return CatalogEntity(id: entityIDs[entity.name] ?? 0, name: entity.name, parentID: entity.parent.flatMap { entityIDs[$0] },
                             isAbstract: entity.isAbstract, attributes: attributes.sorted { $0.id < $1.id },
                             relationships: relationships.sorted { $0.id < $1.id }, originalName: entity.originalName)
    }

    /// Whether `attribute` keeps the id of `old`, the attribute of the previous version it
    /// continues: the same storage type, or a plain type that became codable when the codable
    /// type may decode from the stored plain value.
    static func keepsID(_ old: CatalogAttribute, as attribute: Attribute) -> Bool {
        if old.type.storageTag == attribute.type.storageTag { return true }
        guard case .codable = attribute.type else { return false }
        return attribute.codableProbe.mayDecode(fromPlain: old.type)
    }

    /// The one id every adopter that has a candidate agrees on; nil when none has one or two
    /// disagree (then no adopter's values could be read under a single inherited attribute).
    private static func agreed(_ candidates: [UInt32?]) -> UInt32? {
        let ids = Set(candidates.compactMap { $0 })
        return ids.count == 1 ? ids.first : nil
    }

    /// The previous versions of the entities that inherit, directly or not, from the entity
    /// `name` (new in this version) in `schema` and existed before (`matched`), in
    /// declaration order.
    private static func adopters(of name: String, in schema: Schema, matched: [String: CatalogEntity]) -> [CatalogEntity] {
        schema.entities.compactMap { entity -> CatalogEntity? in
            guard entity.name != name, let old = matched[entity.name],
                  let ancestry = try? schema.ancestry(of: entity.name), ancestry.contains(where: { $0.name == name }) else { return nil }
            return old
        }
    }

    /// Fills in inverse ids. `entities` are in `schema`'s declaration order; an inverse may be
    /// inherited by the destination, so the destination's ancestry is searched.
    private static func resolveInverses(in entities: inout [CatalogEntity], of schema: Schema) {
        var relationshipIDs: [String: [String: UInt32]] = [:]  // entity name → relationship name → id
        for entity in entities {
            for relationship in entity.relationships { relationshipIDs[entity.name, default: [:]][relationship.name] = relationship.id }
        }
        for (index, declared) in schema.entities.enumerated() {
            for position in entities[index].relationships.indices {
                let name = entities[index].relationships[position].name
                guard let source = declared.relationship(named: name), let inverseName = source.inverse else { continue }
                let ancestry = (try? schema.ancestry(of: source.destination)) ?? []
                entities[index].relationships[position].inverseID = ancestry.lazy.compactMap { relationshipIDs[$0.name]?[inverseName] }.first
            }
        }
    }

    /// The element named `name`, else the one named `originalName`.
    private static func match<Element>(_ name: String, _ originalName: String?, in elements: [Element],
                                       name key: KeyPath<Element, String>) -> Element?
    {
        elements.first { $0[keyPath: key] == name } ?? originalName.flatMap { original in elements.first { $0[keyPath: key] == original } }
    }

    /// The id counters of one registration, and the previous ids already taken over.
    private struct Allocation {
        var nextEntity: UInt32
        var nextProperty: UInt32
        var claimedEntities: Set<UInt32> = []
        var claimedProperties: Set<UInt32> = []

        /// `previous` when it is not taken yet, else the next entity id. (Validation already
        /// rules out two claims on one old name; this keeps ids unshared even if it did not.)
        mutating func entityID(keeping previous: UInt32?) throws(CatalogError) -> UInt32 {
            if let previous, claimedEntities.insert(previous).inserted { return previous }
            return try SchemaCatalog.allocate(&nextEntity, "entity")
        }

        /// As ``entityID(keeping:)``, for attributes and relationships.
        mutating func propertyID(keeping previous: UInt32?) throws(CatalogError) -> UInt32 {
            if let previous, claimedProperties.insert(previous).inserted { return previous }
            return try SchemaCatalog.allocate(&nextProperty, "property")
        }
    }
}
