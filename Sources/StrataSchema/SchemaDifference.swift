/// One difference between two versions of a store's schema, as the catalog sees it (matched
/// by stable ids, so a rename through `originalName` is a rename, not a removal).
package struct SchemaDifference: Hashable, Sendable, CustomStringConvertible {
    /// What changed.
    package enum Change: Hashable, Sendable {
        case entityAdded
        case entityRemoved
        case entityRenamed(from: String)
        /// The entity's parent changed. `blocker` says why existing records cannot simply be
        /// read through the new hierarchy; nil when they can (an entity without a parent
        /// adopting new ancestors whose inherited properties keep the entity's ids).
        case parentChanged(from: String?, to: String?, blocker: String?)
        case attributeAdded(attribute: String, type: AttributeType, optional: Bool, hasDefault: Bool)
        case attributeRemoved(attribute: String, type: AttributeType)
        case attributeRenamed(attribute: String, from: String)
        case attributeTypeChanged(attribute: String, from: AttributeType, to: AttributeType)
        /// A plain attribute (`from`: bool, int, …) became codable (`to`) under the same id:
        /// stored plain values read as the codable type's single-value encoding.
        /// `isIndexed`: the attribute is unique or indexed in the newer version, whose index
        /// would hold the plain values next to codable ones.
        case attributeMadeCodable(attribute: String, from: AttributeType, to: AttributeType, isIndexed: Bool)
        case attributeBecameOptional(attribute: String)
        /// `indexedNils`: the attribute was optional with a default, so records may hold nil (a
        /// null field), and it is unique or indexed: its index keys them as nil, while the
        /// required attribute reads them as the default — not lightweight.
        case attributeBecameRequired(attribute: String, hasDefault: Bool, indexedNils: Bool)
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
    /// invariant 21): records stay readable through the newer version's ids. Not lightweight:
    /// a type change (old values would not be read as the new type), a new required attribute
    /// without a default, an attribute becoming required without a default (old records may
    /// lack a value), a new unique constraint (existing records may violate it), a changed
    /// parent (inherited values move to other ids; record ids must stay unique in the new
    /// hierarchy — except an entity without a parent adopting new ancestors, see
    /// ``Change/parentChanged(from:to:blocker:)``), a to-many relationship becoming to-one (a
    /// stored list of several ids does not read as one). A codable attribute whose type name
    /// changes stays lightweight (same id, same stored form); a plain attribute made codable
    /// under the same id is lightweight unless it is unique or indexed.
    package var isLightweight: Bool {
        switch change {
        case .attributeAdded(_, _, let optional, let hasDefault): optional || hasDefault
        case .attributeTypeChanged(_, let from, let to):
            // Only a codable attribute's type name may change: its stored form (JSON) is the same kind.
            if case .codable = from, case .codable = to { true } else { false }
        case .attributeBecameRequired(_, let hasDefault, let indexedNils): hasDefault && !indexedNils
        case .uniqueAdded: false
        case .parentChanged(_, _, let blocker): blocker == nil
        case .attributeMadeCodable(_, _, _, let isIndexed): !isIndexed
        case .relationshipBecameToOne: false
        default: true
        }
    }

    /// Why a plain attribute made codable under a new id loses its values: its codable type
    /// never decodes from a single value of the stored type (SchemaCatalog.register).
    private static func codableHint(from: AttributeType, to: AttributeType) -> String {
        guard case .codable(let typeName) = to else { return "" }
        if case .codable = from { return "" }
        return " (\(typeName) does not decode from a single \(from) value)"
    }

    /// Whether an app with the *older* version can read records written under the newer one
    /// through the older version's ids (a store opened read-only by the app of a pulled
    /// release): lightweight, except an attribute made codable, whose new values are JSON the
    /// older plain type does not read.
    package var isReadableByOlderVersion: Bool {
        if case .attributeMadeCodable = change { return false }
        return isLightweight
    }

    package var description: String {
        switch change {
        case .entityAdded: "entity \(entity) added"
        case .entityRemoved: "entity \(entity) removed"
        case .entityRenamed(let from): "entity \(from) renamed \(entity)"
        case .parentChanged(let from, let to, let blocker):
            "entity \(entity): parent \(from ?? "none") became \(to ?? "none")" + (blocker.map { " (\($0))" } ?? "")
        case .attributeAdded(let name, _, let optional, let hasDefault):
            "\(entity).\(name) added" + (optional ? " (optional)" : hasDefault ? " (with a default)" : " (required, no default)")
        case .attributeRemoved(let name, _): "\(entity).\(name) removed"
        case .attributeRenamed(let name, let from): "\(entity).\(from) renamed \(name)"
        case .attributeTypeChanged(let name, let from, let to):
            "\(entity).\(name) changed type from \(from) to \(to)" + Self.codableHint(from: from, to: to)
        case .attributeMadeCodable(let name, let from, let to, let isIndexed):
            "\(entity).\(name) became \(to), its stored \(from) values read as its single-value encoding"
                + (isIndexed ? " (it is unique or indexed: its index holds the \(from) values; drop the option or use a custom stage)" : "")
        case .attributeBecameOptional(let name): "\(entity).\(name) became optional"
        case .attributeBecameRequired(let name, let hasDefault, let indexedNils):
            "\(entity).\(name) became required" + (hasDefault ? " (with a default)" : " (no default)")
                + (indexedNils ? " (records saved with nil keep nil in its index)" : "")
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
    /// type change. Sorted for stable output. `nullFieldIDs`: the attributes whose records may
    /// hold null fields from versions before `older` too (`SchemaCatalog.mayHoldNullFields`);
    /// `older`'s own optional attributes with a default count without it.
    package func differences(from older: CatalogVersion, nullFieldIDs: Set<UInt32> = []) -> [SchemaDifference] {
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
            // An entity whose parent changed is compared with everything it inherits: an
            // inherited property that is new to it must be one its old records can lack.
            let parentChanged = oldParent != newParent
            if parentChanged {
                result.append(SchemaDifference(entity: entity.name, change: .parentChanged(
                    from: oldParent, to: newParent, blocker: adoptionBlocker(entity, old: old, older: older))))
            }
            let newAttributes = parentChanged ? resolvedAttributes(ofEntity: entity.id) : entity.attributes
            let newRelationships = parentChanged ? resolvedRelationships(ofEntity: entity.id) : entity.relationships
            let oldAttributes = parentChanged ? older.resolvedAttributes(ofEntity: old.id) : old.attributes
            let oldRelationshipList = parentChanged ? older.resolvedRelationships(ofEntity: old.id) : old.relationships
            result += Self.attributeDifferences(entity: entity.name, from: oldAttributes, to: newAttributes, nullFieldIDs: nullFieldIDs)
            let oldRelationships = Dictionary(oldRelationshipList.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let newRelationshipIDs = Set(newRelationships.map(\.id))
            for relationship in newRelationships {
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
            for relationship in oldRelationshipList where !newRelationshipIDs.contains(relationship.id) {
                result.append(SchemaDifference(entity: entity.name, change: .relationshipRemoved(relationship: relationship.name)))
            }
        }
        for old in older.entities where !newerIDs.contains(old.id) {
            result.append(SchemaDifference(entity: old.name, change: .entityRemoved))
        }
        return result.sorted { $0.description < $1.description }
    }

    /// Why `entity` (this version), continuing `old` (of `older`), cannot adopt its new
    /// parent without rewriting records; nil when it can. Adopting is lightweight when:
    /// - the entity had no parent (leaving or changing a hierarchy moves inherited values to
    ///   other ids);
    /// - every new ancestor is new in this version (an existing one has records whose ids were
    ///   handed out by another counter and may equal the entity's);
    /// - no other entity that existed before joins the same new hierarchy from another old
    ///   hierarchy (their record ids would collide likewise);
    /// - every attribute and relationship the entity had and still has — now inherited or not —
    ///   keeps its id (SchemaCatalog.register lets a new ancestor take it over; adopters that
    ///   hold the same name under different ids cannot share one).
    private func adoptionBlocker(_ entity: CatalogEntity, old: CatalogEntity, older: CatalogVersion) -> String? {
        if old.parentID != nil { return "it had a parent before: only an entity without one adopts a parent without rewriting" }
        let ancestors = ancestry(ofEntity: entity.id).dropLast()
        if let existing = ancestors.first(where: { older.entity(id: $0.id) != nil }) {
            return "its new ancestor \(existing.name) already existed: records of both would share one id space and may collide"
        }
        let root = ancestors.first?.id ?? entity.id
        let oldRoot = older.ancestry(ofEntity: old.id).first?.id ?? old.id
        let joining = entities.filter { other in
            other.id != entity.id && older.entity(id: other.id) != nil && (ancestry(ofEntity: other.id).first?.id ?? other.id) == root
                && (older.ancestry(ofEntity: other.id).first?.id ?? other.id) != oldRoot
        }
        if let other = joining.first {
            return "\(other.name) joins the same hierarchy from another one: their record ids were handed out separately and may collide"
        }
        let newAttributes = resolvedAttributes(ofEntity: entity.id), newRelationships = resolvedRelationships(ofEntity: entity.id)
        for attribute in older.resolvedAttributes(ofEntity: old.id) {
            if let now = newAttributes.first(where: { $0.name == attribute.name }), now.id != attribute.id,
               !newAttributes.contains(where: { $0.id == attribute.id }) {
                return "\(entity.name).\(attribute.name) would be inherited under a new id and its stored values not read "
                    + "(entities adopting the same parent hold it under different ids, or its type changed)"
            }
        }
        for relationship in older.resolvedRelationships(ofEntity: old.id) {
            if let now = newRelationships.first(where: { $0.name == relationship.name }), now.id != relationship.id,
               !newRelationships.contains(where: { $0.id == relationship.id }) {
                return "\(entity.name).\(relationship.name) would be inherited under a new id and its stored values not read "
                    + "(entities adopting the same parent hold it under different ids, or its destination changed)"
            }
        }
        return nil
    }

    private static func attributeDifferences(entity: String, from old: [CatalogAttribute], to new: [CatalogAttribute],
                                             nullFieldIDs: Set<UInt32>) -> [SchemaDifference] {
        var result: [SchemaDifference] = []
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newIDs = Set(new.map(\.id))
        var retyped = Set<String>()
        for attribute in new {
            guard let before = oldByID[attribute.id] else {
                // The same name under another id: a changed storage type (an inherited
                // attribute now held under another id reads as removed and added instead).
                if let sameName = old.first(where: { $0.name == attribute.name && !newIDs.contains($0.id) }),
                   sameName.type != attribute.type {
                    retyped.insert(sameName.name)
                    result.append(SchemaDifference(entity: entity, change: .attributeTypeChanged(attribute: attribute.name,
                                                                                                from: sameName.type, to: attribute.type)))
                } else {
                    result.append(SchemaDifference(entity: entity, change: .attributeAdded(
                        attribute: attribute.name, type: attribute.type, optional: attribute.isOptional,
                        hasDefault: !attribute.defaultValue.isNull)))
                }
                continue
            }
            func note(_ change: SchemaDifference.Change) { result.append(SchemaDifference(entity: entity, change: change)) }
            if before.name != attribute.name { note(.attributeRenamed(attribute: attribute.name, from: before.name)) }
            if before.type != attribute.type {
                if case .codable = attribute.type, before.type.storageTag != attribute.type.storageTag {
                    note(.attributeMadeCodable(attribute: attribute.name, from: before.type, to: attribute.type,
                                               isIndexed: attribute.isUnique || attribute.isIndexed))
                } else {
                    note(.attributeTypeChanged(attribute: attribute.name, from: before.type, to: attribute.type))
                }
            }
            if before.isOptional && !attribute.isOptional {
                // Optional with a default, now or in an earlier version: records may hold null fields.
                let heldNil = !before.defaultValue.isNull || nullFieldIDs.contains(attribute.id)
                note(.attributeBecameRequired(attribute: attribute.name, hasDefault: !attribute.defaultValue.isNull,
                                              indexedNils: heldNil && (before.isIndexed || before.isUnique || attribute.isIndexed || attribute.isUnique)))
            }
            if !before.isOptional && attribute.isOptional { note(.attributeBecameOptional(attribute: attribute.name)) }
            if before.defaultValue != attribute.defaultValue { note(.attributeDefaultChanged(attribute: attribute.name)) }
            if !before.isUnique && attribute.isUnique { note(.uniqueAdded(attribute: attribute.name)) }
            if before.isUnique && !attribute.isUnique { note(.uniqueRemoved(attribute: attribute.name)) }
            if !before.isIndexed && attribute.isIndexed { note(.indexAdded(attribute: attribute.name)) }
            if before.isIndexed && !attribute.isIndexed { note(.indexRemoved(attribute: attribute.name)) }
        }
        for attribute in old where !newIDs.contains(attribute.id) && !retyped.contains(attribute.name) {
            result.append(SchemaDifference(entity: entity, change: .attributeRemoved(attribute: attribute.name, type: attribute.type)))
        }
        return result
    }
}

extension SchemaCatalog {
    /// The attributes whose records may hold null fields (Docs/FileFormat.md, "Null fields"):
    /// those optional with a non-null default in some version up to `versionID`.
    package func mayHoldNullFields(through versionID: UInt32) -> Set<UInt32> {
        var ids = Set<UInt32>()
        for version in versions where version.id <= versionID {
            for entity in version.entities {
                for attribute in entity.attributes where attribute.isOptional && !attribute.defaultValue.isNull { ids.insert(attribute.id) }
            }
        }
        return ids
    }
}
