import StrataIO
import StrataSchema

/// A record store bound to the app's schema, and the engine state that goes with the binding:
/// the bound entities' model, each inheritance hierarchy's identifier counter, the unique
/// attributes, and what the journal records of each entity. One per open store, shared by
/// every context; the store API above keeps none of this state itself.
///
/// Thread-safe: everything is immutable but the identifier counters, which are a `Lock`.
package final class BoundRecords: Sendable {
    /// The records.
    package let records: RecordStore
    /// The app's schema bound to the store's catalog.
    package let binding: SchemaBinding
    /// The bound entities' inheritance families and relationships.
    package let model: EntityModel
    /// Per entity id, its unique attributes and the key of records lacking a value; fixed at
    /// open (only binding changes indexes, and only one instance writes a store).
    package let uniqueAttributes: [UInt32: [(attributeID: UInt32, defaultKey: [UInt8])]]
    /// Per entity id, the attributes whose values a deleted record leaves in the journal.
    package let tombstoneAttributes: [UInt32: Set<UInt32>]
    /// Per entity id, the bound version's properties and the values records lacking them read
    /// as (`journalProperties(of:)`), in the form the journal's comparison reads: updates are
    /// journaled as the app reads records (`HistoryRecorder.visibleDefaults`). Made once here,
    /// not in every transaction.
    package let journalDefaults: [UInt32: RecordDefaults]
    /// Next identifier to hand out per root entity id (ids are reserved in memory at insert,
    /// made durable by the save that uses them; a hierarchy shares its root's counter).
    private let nextIDs: Lock<[UInt32: UInt64]>

    /// The state of `records` bound by `binding` to `schema`, as of `snapshot`.
    package init(records: RecordStore, binding: SchemaBinding, schema: Schema, snapshot: RecordSnapshot) {
        self.records = records
        self.binding = binding
        let model = EntityModel(version: binding.version)
        self.model = model
        // A hierarchy's ids come from its root's counter: start it above every counter of
        // the hierarchy (sub-entities of stores written before kept their own).
        var nextIDs: [UInt32: UInt64] = [:]
        for (entityID, entity) in snapshot.root.entities {
            let rootID = model.rootID(of: entityID)
            nextIDs[rootID] = max(nextIDs[rootID] ?? 1, entity.nextRowID)
        }
        self.nextIDs = Lock(nextIDs)
        var uniques: [UInt32: [(attributeID: UInt32, defaultKey: [UInt8])]] = [:]
        for entityID in Set(snapshot.root.indexes.keys.map(\.entityID)) {
            let attributes = snapshot.uniqueAttributes(of: entityID)
            if !attributes.isEmpty { uniques[entityID] = attributes }
        }
        uniqueAttributes = uniques
        tombstoneAttributes = Self.tombstoneAttributes(of: schema, binding: binding)
        journalDefaults = Self.journalProperties(of: binding).mapValues { RecordDefaults($0) }
    }

    /// Per entity id of the bound version, its properties (inherited ones included) and the
    /// value a read gives a record lacking each one (`HistoryRecorder.visibleDefaults`).
    static func journalProperties(of binding: SchemaBinding) -> [UInt32: [UInt32: Value]] {
        var result: [UInt32: [UInt32: Value]] = [:]
        for entity in binding.version.entities {
            var properties: [UInt32: Value] = [:]
            for attribute in binding.version.resolvedAttributes(ofEntity: entity.id) { properties[attribute.id] = attribute.defaultValue }
            for relationship in binding.version.resolvedRelationships(ofEntity: entity.id) { properties[relationship.id] = .null }
            result[entity.id] = properties
        }
        return result
    }

    /// Per entity id, the ids of the attributes (inherited ones included) marked
    /// `preserveValueOnDeletion` in `schema`.
    static func tombstoneAttributes(of schema: Schema, binding: SchemaBinding) -> [UInt32: Set<UInt32>] {
        var result: [UInt32: Set<UInt32>] = [:]
        for entity in schema.entities {
            guard let entityID = try? binding.entityID(of: entity.name),
                  let attributes = try? schema.resolvedAttributes(of: entity.name) else { continue }
            let ids = Set(attributes.filter { $0.options.contains(.preserveValueOnDeletion) }
                .compactMap { binding.attributeID(named: $0.name, ofEntity: entityID) })
            if !ids.isEmpty { result[entityID] = ids }
        }
        return result
    }

    // MARK: Identifiers

    /// The next identifier of each hierarchy (by root entity id) as of now; a hierarchy not
    /// listed starts at 1.
    package func nextIDsSnapshot() -> [UInt32: UInt64] {
        nextIDs.withLock { $0 }
    }

    /// The next identifier the hierarchy of `entityID` hands out: every record it holds, saved
    /// or not, has a smaller one.
    package func nextID(ofHierarchyOf entityID: UInt32) -> UInt64 {
        let rootID = model.rootID(of: entityID)
        return nextIDs.withLock { $0[rootID, default: 1] }
    }

    /// A new identifier for a record of `entityID`, unique in its inheritance hierarchy.
    package func allocateID(for entityID: UInt32) -> UInt64 {
        let rootID = model.rootID(of: entityID)
        return nextIDs.withLock { ids in
            let id = ids[rootID, default: 1]
            ids[rootID] = id + 1
            return id
        }
    }

    /// Reserves `count` consecutive identifiers of the hierarchy whose root is `rootID` (see
    /// `allocateID(for:)`): the first of them.
    package func reserveIDs(root rootID: UInt32, count: UInt64) -> UInt64 {
        nextIDs.withLock { ids in
            let first = ids[rootID, default: 1]
            ids[rootID] = first + count
            return first
        }
    }

    /// Gives back reserved identifiers `unused` that were not handed out, when nothing was
    /// reserved after them (otherwise they are skipped: ids need not be dense).
    package func releaseIDs(root rootID: UInt32, unused: Range<UInt64>) {
        guard !unused.isEmpty else { return }
        nextIDs.withLock { ids in
            if ids[rootID] == unused.upperBound { ids[rootID] = unused.lowerBound }
        }
    }

    // MARK: Records

    /// Throws `StrataError.abstractEntity` when records of `entityID` cannot be inserted.
    package func checkInsertable(_ entityID: UInt32) throws {
        if let info = model.info(entityID), info.isAbstract { throw StrataError.abstractEntity(info.name) }
    }

    /// The bytes of a record of a sub-entity (`stored`) updated through an ancestor's type
    /// (`written`, encoded for entity `declaredID`): the ancestor's properties from `written`,
    /// the sub-entity's own from `stored`.
    /// - Throws: `StrataError.recordCoding` for bytes that do not decode.
    package func merge(_ written: [UInt8], as declaredID: UInt32, into stored: [UInt8]) throws -> [UInt8] {
        do {
            let properties = model.info(declaredID)?.propertyIDs ?? []
            var values = try RecordCodec.decode(stored).filter { !properties.contains($0.key) }
            for (id, value) in try RecordCodec.decode(written) { values[id] = value }
            return RecordCodec.encode(values, keepingNullFields: true)
        } catch {
            throw StrataError.recordCoding(reason: "a record being updated is corrupt: \(error.reason)")
        }
    }

    /// A unique constraint violation, with the entity's and attribute's names.
    package func uniqueViolation(entityID: UInt32, attributeID: UInt32, existing: String) -> StrataError {
        let names = binding.names(entityID: entityID, attributeID: attributeID)
        return .uniqueConstraintViolation(entity: names.entity, attribute: names.attribute, existing: existing)
    }
}
