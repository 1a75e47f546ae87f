/// One difference between two versions of a store's schema, as the catalog sees it (matched
/// by stable ids, so a rename through `originalName` is a rename, not a removal).
package struct SchemaDifference: Hashable, Sendable, CustomStringConvertible {
    /// What changed.
    package enum Change: Hashable, Sendable {
        case entityAdded
        case entityRemoved
        case entityRenamed(from: String)
        case parentChanged(from: String?, to: String?)
        case attributeAdded(attribute: String, optional: Bool, hasDefault: Bool)
        case attributeRemoved(attribute: String)
        case attributeRenamed(attribute: String, from: String)
        case attributeTypeChanged(attribute: String, from: AttributeType, to: AttributeType)
        case attributeBecameOptional(attribute: String)
        case attributeBecameRequired(attribute: String, hasDefault: Bool)
        case attributeDefaultChanged(attribute: String)
        case uniqueAdded(attribute: String)
        case uniqueRemoved(attribute: String)
        case indexAdded(attribute: String)
        case indexRemoved(attribute: String)
        case relationshipAdded(relationship: String)
        case relationshipRemoved(relationship: String)
        case relationshipChanged(relationship: String)
        /// A to-many relationship became to-one: stored lists of several ids no longer read.
        case relationshipBecameToOne(relationship: String)
    }

    /// The entity, by its name in the newer version (the older one for a removal).
    package var entity: String
    package var change: Change

    package init(entity: String, change: Change) {
        self.entity = entity
        self.change = change
    }

    /// Whether the change can be applied without touching a record (Docs/Architecture.md,
    /// invariant 18): records stay readable through the newer version's ids. Not lightweight:
    /// a type change (old values would not be read as the new type), a new required attribute
    /// without a default, an attribute becoming required without a default (old records may
    /// lack a value), a new unique constraint (existing records may violate it), a changed
    /// parent (inherited values move to other ids; record ids must stay unique in the new
    /// hierarchy), a to-many relationship becoming to-one (a stored list of several ids does
    /// not read as one). A codable
    /// attribute whose type name changes stays lightweight (same id, same stored form).
    package var isLightweight: Bool {
        switch change {
        case .attributeAdded(_, let optional, let hasDefault): optional || hasDefault
        case .attributeTypeChanged(_, let from, let to):
            // Only a codable attribute's type name may change: its stored form (JSON) is the same kind.
            if case .codable = from, case .codable = to { true } else { false }
        case .attributeBecameRequired(_, let hasDefault): hasDefault
        case .uniqueAdded: false
        case .parentChanged: false
        case .relationshipBecameToOne: false
        default: true
        }
    }

    package var description: String {
        switch change {
        case .entityAdded: "entity \(entity) added"
        case .entityRemoved: "entity \(entity) removed"
        case .entityRenamed(let from): "entity \(from) renamed \(entity)"
        case .parentChanged(let from, let to): "entity \(entity): parent \(from ?? "none") became \(to ?? "none")"
        case .attributeAdded(let name, let optional, let hasDefault):
            "\(entity).\(name) added" + (optional ? " (optional)" : hasDefault ? " (with a default)" : " (required, no default)")
        case .attributeRemoved(let name): "\(entity).\(name) removed"
        case .attributeRenamed(let name, let from): "\(entity).\(from) renamed \(name)"
        case .attributeTypeChanged(let name, let from, let to): "\(entity).\(name) changed type from \(from) to \(to)"
        case .attributeBecameOptional(let name): "\(entity).\(name) became optional"
        case .attributeBecameRequired(let name, let hasDefault):
            "\(entity).\(name) became required" + (hasDefault ? " (with a default)" : " (no default)")
        case .attributeDefaultChanged(let name): "\(entity).\(name) changed its default"
        case .uniqueAdded(let name): "\(entity).\(name) became unique"
        case .uniqueRemoved(let name): "\(entity).\(name) is no longer unique"
        case .indexAdded(let name): "\(entity).\(name) became indexed"
        case .indexRemoved(let name): "\(entity).\(name) is no longer indexed"
        case .relationshipAdded(let name): "\(entity).\(name) relationship added"
        case .relationshipRemoved(let name): "\(entity).\(name) relationship removed"
        case .relationshipChanged(let name): "\(entity).\(name) relationship changed (cardinality, delete rule, destination or inverse)"
        case .relationshipBecameToOne(let name): "\(entity).\(name) relationship changed from to-many to to-one"
        }
    }
}

extension CatalogVersion {
    /// Every difference from `older` to this version, entities and properties matched by id;
    /// an attribute whose storage type changed (a new id under the same name) is reported as a
    /// type change. Sorted for stable output.
    package func differences(from older: CatalogVersion) -> [SchemaDifference] {
        var result: [SchemaDifference] = []
        let olderByID = Dictionary(older.entities.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newerIDs = Set(entities.map(\.id))
        let olderNames = Dictionary(older.entities.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        let newerNames = Dictionary(entities.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        for entity in entities {
            guard let old = olderByID[entity.id] else {
                result.append(SchemaDifference(entity: entity.name, change: .entityAdded))
                continue
            }
            if old.name != entity.name { result.append(SchemaDifference(entity: entity.name, change: .entityRenamed(from: old.name))) }
            let oldParent = old.parentID.flatMap { olderNames[$0] }, newParent = entity.parentID.flatMap { newerNames[$0] }
            if oldParent != newParent {
                result.append(SchemaDifference(entity: entity.name, change: .parentChanged(from: oldParent, to: newParent)))
            }
            result += Self.attributeDifferences(entity: entity.name, from: old.attributes, to: entity.attributes)
            let oldRelationships = Dictionary(old.relationships.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let newRelationshipIDs = Set(entity.relationships.map(\.id))
            for relationship in entity.relationships {
                guard let before = oldRelationships[relationship.id] else {
                    result.append(SchemaDifference(entity: entity.name, change: .relationshipAdded(relationship: relationship.name)))
                    continue
                }
                if before.cardinality == .toMany && relationship.cardinality == .toOne {
                    result.append(SchemaDifference(entity: entity.name, change: .relationshipBecameToOne(relationship: relationship.name)))
                } else if before.cardinality != relationship.cardinality || before.deleteRule != relationship.deleteRule
                    || before.destinationID != relationship.destinationID || before.inverseID != relationship.inverseID
                    || before.isOptional != relationship.isOptional || before.name != relationship.name {
                    result.append(SchemaDifference(entity: entity.name, change: .relationshipChanged(relationship: relationship.name)))
                }
            }
            for relationship in old.relationships where !newRelationshipIDs.contains(relationship.id) {
                result.append(SchemaDifference(entity: entity.name, change: .relationshipRemoved(relationship: relationship.name)))
            }
        }
        for old in older.entities where !newerIDs.contains(old.id) {
            result.append(SchemaDifference(entity: old.name, change: .entityRemoved))
        }
        return result.sorted { $0.description < $1.description }
    }

    private static func attributeDifferences(entity: String, from old: [CatalogAttribute],
                                             to new: [CatalogAttribute]) -> [SchemaDifference] {
        var result: [SchemaDifference] = []
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newIDs = Set(new.map(\.id))
        var retyped = Set<String>()
        for attribute in new {
            guard let before = oldByID[attribute.id] else {
                if let sameName = old.first(where: { $0.name == attribute.name && !newIDs.contains($0.id) }) {
                    retyped.insert(sameName.name)
                    result.append(SchemaDifference(entity: entity, change: .attributeTypeChanged(attribute: attribute.name,
                                                                                                from: sameName.type, to: attribute.type)))
                } else {
                    result.append(SchemaDifference(entity: entity, change: .attributeAdded(
                        attribute: attribute.name, optional: attribute.isOptional, hasDefault: !attribute.defaultValue.isNull)))
                }
                continue
            }
            func note(_ change: SchemaDifference.Change) { result.append(SchemaDifference(entity: entity, change: change)) }
            if before.name != attribute.name { note(.attributeRenamed(attribute: attribute.name, from: before.name)) }
            if before.type != attribute.type { note(.attributeTypeChanged(attribute: attribute.name, from: before.type, to: attribute.type)) }
            if before.isOptional && !attribute.isOptional {
                note(.attributeBecameRequired(attribute: attribute.name, hasDefault: !attribute.defaultValue.isNull))
            }
            if !before.isOptional && attribute.isOptional { note(.attributeBecameOptional(attribute: attribute.name)) }
            if before.defaultValue != attribute.defaultValue { note(.attributeDefaultChanged(attribute: attribute.name)) }
            if !before.isUnique && attribute.isUnique { note(.uniqueAdded(attribute: attribute.name)) }
            if before.isUnique && !attribute.isUnique { note(.uniqueRemoved(attribute: attribute.name)) }
            if !before.isIndexed && attribute.isIndexed { note(.indexAdded(attribute: attribute.name)) }
            if before.isIndexed && !attribute.isIndexed { note(.indexRemoved(attribute: attribute.name)) }
        }
        for attribute in old where !newIDs.contains(attribute.id) && !retyped.contains(attribute.name) {
            result.append(SchemaDifference(entity: entity, change: .attributeRemoved(attribute: attribute.name)))
        }
        return result
    }
}
