#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import StrataFormat
import StrataIO
import StrataPageLog
import StrataSchema

/// Entity ids by record type, so `entityName` (by default the type's name, formatted on every
/// call) is looked up once per type rather than once per record.
private final class EntityIDsByType: Sendable {
    let ids = Lock<[ObjectIdentifier: UInt32]>([:])
}

/// The binding's verdicts on predicates' key paths (`KeyPathVerdicts`), probed once each.
private final class BindingKeyPathVerdicts: KeyPathVerdicts {
    private let verdicts = Lock<[ProbeKey: Bool]>([:])
    func verdict(for key: ProbeKey) -> Bool? { verdicts.withLock { $0[key] } }
    func record(_ verdict: Bool, for key: ProbeKey) { verdicts.withLock { $0[key] = verdict } }
}

/// Errors of binding a schema to a store and of typed records.
package enum SchemaBindingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The stored catalog could not be decoded.
    case corruptCatalog(reason: String)
    /// The schema could not be registered in the catalog.
    case registration(String)
    /// A record type whose entity the bound schema does not have.
    case unknownEntity(String)
    /// A typed record could not be encoded or decoded.
    case recordCoding(String)
    /// The schema differs from the store's in ways that need a migration plan; lists every
    /// difference, those that are not lightweight first.
    case schemaMismatch(stored: String, current: String, differences: [SchemaDifference])
    /// An attribute becomes unique (or gains a default as a unique attribute) but two records
    /// already hold one value of it; nothing was stored.
    case uniqueConstraintViolation(entity: String, attribute: String, recordID: UInt64, existingID: UInt64)

    package var description: String {
        switch self {
        case .corruptCatalog(let reason): "the stored schema catalog is corrupt: \(reason)"
        case .registration(let reason): "the schema cannot be registered: \(reason)"
        case .unknownEntity(let name): "the schema has no entity named \(name)"
        case .recordCoding(let reason): reason
        case .schemaMismatch(let stored, let current, let differences):
            "the store's schema (version \(stored)) differs from the app's (version \(current)) in ways that old records cannot be read "
                + "through: " + SchemaDifference.explained(differences).joined(separator: "; ")
        case .uniqueConstraintViolation(let entity, let attribute, let recordID, let existingID):
            "\(entity).\(attribute) cannot become unique: records \(existingID) and \(recordID) hold the same value"
        }
    }
}

/// A schema bound to a store's catalog: the catalog version it registered as, and the stable
/// entity and attribute ids typed records are stored under.
///
/// Lightweight schema changes cost nothing here: a record is stored as (attribute id → value),
/// so a record written under an older version is read through the current version's ids —
/// a renamed attribute keeps its id, a dropped one is ignored, an added one takes its default.
/// No page is rewritten when the schema changes (Architecture.md, invariant 21).
///
/// A class (immutable, shared): callers reach it through a store on every record coded, and
/// a struct of this many references was copied — retained field by field — on each access.
package final class SchemaBinding: Sendable {
    package let catalog: SchemaCatalog
    package let versionID: UInt32
    package let version: CatalogVersion

    private let entityIDs: [String: UInt32]
    /// Per entity id, computed once: its attributes' names, ids and defaults, arranged for
    /// coding records straight to and from bytes.
    private let layouts: [UInt32: RecordLayout]
    private let idsByType = EntityIDsByType()
    private let keyPathVerdicts = BindingKeyPathVerdicts()

    package init(catalog: SchemaCatalog, versionID: UInt32, version: CatalogVersion) {
        self.catalog = catalog
        self.versionID = versionID
        self.version = version
        entityIDs = Dictionary(version.entities.map { ($0.name, $0.id) }, uniquingKeysWith: { first, _ in first })
        var layouts: [UInt32: RecordLayout] = [:]
        for entity in version.entities { layouts[entity.id] = RecordLayout(version: version, entityID: entity.id) }
        self.layouts = layouts
    }

    /// The entity id of an entity name.
    package func entityID(of name: String) throws -> UInt32 {
        guard let id = entityIDs[name] else { throw SchemaBindingError.unknownEntity(name) }
        return id
    }

    /// The id of an attribute (inherited ones included) of an entity, or nil.
    package func attributeID(named name: String, ofEntity entityID: UInt32) -> UInt32? {
        layouts[entityID]?.attributeIDs[name]
    }

    /// The names of an entity and one of its attributes, for messages ("#id" when unknown).
    package func names(entityID: UInt32, attributeID: UInt32) -> (entity: String, attribute: String) {
        (version.entity(id: entityID)?.name ?? "#\(entityID)",
         version.resolvedAttributes(ofEntity: entityID).first { $0.id == attributeID }?.name ?? "#\(attributeID)")
    }

    /// The entity id of a record type.
    package func entityID<Record: PersistentRecord>(for type: Record.Type) throws -> UInt32 {
        try entityID(for: type as any PersistentRecord.Type)
    }

    /// `entityID(for:)` for a type known only at run time.
    package func entityID(for type: any PersistentRecord.Type) throws -> UInt32 {
        let key = ObjectIdentifier(type)
        if let id = idsByType.ids.withLock({ $0[key] }) { return id }
        let id = try entityID(of: type.entityName)
        idsByType.ids.withLock { $0[key] = id }
        return id
    }

    /// A typed record's entity id and bytes.
    package func encode<Record: PersistentRecord>(_ record: Record) throws -> (entityID: UInt32, bytes: [UInt8]) {
        let entityID = try entityID(for: Record.self)
        return (entityID, try encode(record, layout: layout(of: entityID)))
    }

    /// A typed record's bytes with its entity's layout (from `layout(of:)`), for callers that
    /// resolve the entity once for many records.
    package func encode<Record: PersistentRecord>(_ record: Record, layout: RecordLayout) throws -> [UInt8] {
        do {
            return try RecordEncoder().encode(record, layout: layout)
        } catch {
            throw SchemaBindingError.recordCoding("\(error)")
        }
    }

    /// A typed record's bytes, encoded by `session` (made with the entity's layout) into its
    /// own memory: valid until the session's next call.
    package func encodeInPlace<Record: PersistentRecord>(_ record: Record, with session: RecordEncodingSession) throws -> UnsafeRawBufferPointer {
        do {
            return try session.encodeInPlace(record)
        } catch {
            throw SchemaBindingError.recordCoding("\(error)")
        }
    }

    /// `encodeInPlace`, or nil for a record holding large data payloads, which `session`'s
    /// `withPieces` then gives without copying them.
    package func encodeInPlaceUnlessSpliced<Record: PersistentRecord>(_ record: Record, with session: RecordEncodingSession) throws
        -> UnsafeRawBufferPointer? {
        do {
            return try session.encodeInPlaceUnlessSpliced(record)
        } catch {
            throw SchemaBindingError.recordCoding("\(error)")
        }
    }

    /// The layout records of an entity are coded with (an empty one for an unknown entity).
    package func layout(of entityID: UInt32) -> RecordLayout {
        layouts[entityID] ?? RecordLayout(attributes: [])
    }

    /// A typed record from bytes written under any catalog version: attributes are named by
    /// this version's ids; attributes absent from the bytes take this version's defaults.
    package func decode<Record: PersistentRecord>(_ type: Record.Type, from bytes: [UInt8]) throws -> Record {
        try bytes.withUnsafeBytes { try decode(type, from: $0) }
    }

    /// A `#Predicate` on `Record` compiled into a pre-filter on stored bytes (see
    /// `RecordCondition`): `.unknown` when nothing in it can be decided from bytes.
    package func condition<Record: PersistentRecord>(for predicate: Predicate<Record>) throws -> RecordCondition {
        let entityID = try entityID(for: Record.self)
        let typeDefaults = Record.attributeDefaults
        var attributes: [String: ConditionAttribute] = [:]
        for attribute in version.resolvedAttributes(ofEntity: entityID) where attributes[attribute.name] == nil {
            let defaultValue = attribute.defaultValue.isNull ? typeDefaults[attribute.name] ?? .null : attribute.defaultValue
            attributes[attribute.name] = ConditionAttribute(id: attribute.id, type: attribute.type, defaultValue: defaultValue)
        }
        return RecordCondition.compile(predicate, attributes: attributes, verdicts: keyPathVerdicts)
    }

    /// A typed record from bytes read in place (a scan passes the leaf's bytes, uncopied).
    package func decode<Record: PersistentRecord>(_ type: Record.Type, from bytes: UnsafeRawBufferPointer) throws -> Record {
        try decode(type, from: bytes, layout: layout(of: try entityID(for: Record.self)))
    }

    /// `decode(_:from:)` with the entity's layout (`layout(of:)`) already looked up, for a
    /// caller that reads many records of one type.
    package func decode<Record: PersistentRecord>(_ type: Record.Type, from bytes: UnsafeRawBufferPointer,
                                                  layout: RecordLayout) throws -> Record {
        try decoding(Record.self) { try RecordDecoder().decode(type, bytes: bytes, layout: layout) }
    }

    /// `decode(_:from:layout:)` by `session` (made with the entity's layout), which reuses its
    /// state from one record to the next.
    package func decode<Record: PersistentRecord>(_ type: Record.Type, from bytes: UnsafeRawBufferPointer,
                                                  session: RecordDecodingSession) throws -> Record {
        try decoding(Record.self) { try session.decode(type, bytes: bytes) }
    }

    /// `body`'s record, its errors named as a binding names them.
    private func decoding<Record: PersistentRecord>(_: Record.Type, _ body: () throws -> Record) throws -> Record {
        do {
            return try body()
        } catch let error as FormatError {
            throw SchemaBindingError.recordCoding("a stored \(Record.entityName) record is corrupt: \(error.reason)")
        } catch {
            throw SchemaBindingError.recordCoding("\(error)")
        }
    }
}

extension RecordStore {
    /// Binds `schema` to the store: decodes the stored catalog, registers the schema (a new
    /// catalog version only when its shape is new to the catalog), stores the catalog if it
    /// changed and makes the store's indexes those the schema declares — in one durable
    /// transaction. Costs the same whatever the store's size, except that an index the store
    /// lacks (an attribute newly indexed or unique, or whose default changed) is built here from
    /// every record of its entity, and one no longer declared is dropped.
    ///
    /// A new unique constraint on an existing attribute is accepted when the records already
    /// satisfy it (building its index checks them).
    ///
    /// - Throws: `SchemaBindingError.schemaMismatch` (storing nothing) when the schema differs
    ///   from the store's newest version in a way that is not lightweight; `.uniqueConstraintViolation`
    ///   (storing nothing) when records repeat a value of a unique attribute; `.corruptCatalog`;
    ///   `.registration` for an invalid schema.
    package func bind(_ schema: Schema, journal: ((RecordTransaction) throws -> Void)? = nil) throws -> SchemaBinding {
        try bind([schema], journal: journal)
    }

    /// Binds `schemas` in order, in one transaction: each is registered after the previous one
    /// and must differ from it only in lightweight ways (as `bind(_:)` requires of one schema);
    /// the catalog is written once and the indexes reconciled with the last. A migration whose
    /// steps are all lightweight commits them together — atomically, with one sync.
    /// `journal`, when the catalog gains a version (the store had one before), starts the
    /// transaction's history entry; the entry then records the new schema version.
    /// - Throws: as `bind(_:)`; nothing is stored.
    package func bind(_ schemas: [Schema], journal: ((RecordTransaction) throws -> Void)? = nil) throws -> SchemaBinding {
        try write { records in
            var original = SchemaCatalog()
            if let bytes = try records.catalogBytes() {
                do { original = try SchemaCatalog.decode(bytes) } catch {
                    throw SchemaBindingError.corruptCatalog(reason: "\(error)")
                }
            }
            var catalog = original
            var registered: (catalog: SchemaCatalog, versionID: UInt32) = (original, original.latest?.id ?? 0)
            var bound: CatalogVersion?
            for schema in schemas {
                do { registered = try catalog.register(schema) } catch {
                    throw SchemaBindingError.registration("\(error)")
                }
                guard let version = registered.catalog.version(id: registered.versionID) else {
                    throw SchemaBindingError.registration("version \(registered.versionID) is missing after registration")
                }
                if let previous = catalog.latest, previous.id != version.id {
                    let differences = version.differences(from: previous, nullFieldIDs: catalog.mayHoldNullFields(through: previous.id))
                    // A new unique constraint does not block: the index build checks it.
                    if differences.contains(where: \.isBlocking) {
                        throw SchemaBindingError.schemaMismatch(
                            stored: "\(previous.schemaVersion)", current: "\(version.schemaVersion)", differences: differences)
                    }
                }
                catalog = registered.catalog
                bound = version
            }
            guard let version = bound else { throw SchemaBindingError.registration("no schema to bind") }
            let catalogChanged = registered.catalog != original
            if catalogChanged { try records.setCatalog(registered.catalog.encoded()) }
            if catalogChanged, original.latest != nil, original.latest?.id != version.id, let journal {
                try journal(records)
                try records.history?.recordSchemaChange(to: version.schemaVersion)
            }
            do { try records.reconcileIndexes(with: version) } catch let RecordTreeError.uniqueConstraintViolation(entityID, attributeID, recordID, existingID) {
                throw SchemaBindingError.uniqueConstraintViolation(
                    entity: version.entity(id: entityID)?.name ?? "#\(entityID)",
                    attribute: version.resolvedAttributes(ofEntity: entityID).first { $0.id == attributeID }?.name ?? "#\(attributeID)",
                    recordID: recordID, existingID: existingID)
            }
            return SchemaBinding(catalog: registered.catalog, versionID: registered.versionID, version: version)
        }
    }
}
