import Synchronization
import StrataIO
import StrataRecords
import StrataSchema

/// Inserts records of the new version from inside a ``RecordTransform`` — into an entity the
/// new version adds, or into the transform's own target entity. They are written with the
/// batch that is running and become visible with the stage's switch. Valid only during the
/// transform call it was handed to.
///
/// **Insert or find.** When the entity has a unique attribute (`attributeOptions`
/// `[.unique]`) and a record of this stage already holds the inserted record's value of it,
/// `insert` updates that record with the new values and returns its identifier — SwiftData's
/// upsert — so a transform moving names into a new entity needs no cache of its own:
///
/// ```swift
/// .map(ShopV1.Item.self, to: ShopV2.Item.self) { old, writer in
///     ShopV2.Item(name: old.name, tag: try writer.insert(ShopV2.Tag(name: old.tagName)))  // Tag.name is unique
/// }
/// ```
///
/// **Identifiers.** A record inserted into an entity of an inheritance hierarchy takes an
/// identifier above every identifier the hierarchy's records keep (those the stage's transforms
/// carry over included), so identifiers stay unique across the hierarchy. In a dry run
/// (`Store.dryRun`) nothing is written and `insert` hands out identifiers from a range no
/// store uses (2⁶² and up); if app code keeps one and the real run stores a reference to it,
/// the real run inserts the record the dry run was given (insert or find, as above) and stores
/// its real identifier instead — an identifier from a dry run is never stored.
public final class MigrationWriter {
    let binding: SchemaBinding
    /// The batch's transaction; nil in a dry run's sample, where nothing is written, and for
    /// a concurrent transform's thread, which cannot insert.
    let transaction: RecordTransaction?
    /// The stage's shared state; nil for a concurrent transform's thread.
    let state: MigrationInsertState?
    /// Whether this is a dry run's writer.
    let isDryRun: Bool
    /// A record rewritten with resolved dry-run identifiers, valid until the next one.
    private var resolved: UnsafeMutableRawBufferPointer?

    package init(binding: SchemaBinding, transaction: RecordTransaction?, state: MigrationInsertState?, isDryRun: Bool = false) {
        self.binding = binding
        self.transaction = transaction
        self.state = state
        self.isDryRun = isDryRun
    }

    deinit { resolved?.deallocate() }

    /// Inserts a record of the new version — or, when the entity has a unique attribute whose
    /// value a record of this stage already holds, updates that record — and returns its
    /// identifier.
    /// - Throws: `StrataError.unknownEntity` when the new version has no entity for `Record`,
    ///   `.invalidSchema` when the entity exists in the old version and is no transform's
    ///   target (its old records are not being rewritten), `.recordCoding`.
    @discardableResult
    public func insert<Record: PersistentRecord>(_ record: Record) throws -> RecordID<Record> {
        let encoded: (entityID: UInt32, bytes: [UInt8])
        do { encoded = try binding.encode(record) } catch SchemaBindingError.unknownEntity {
            throw StrataError.unknownEntity(Record.entityName)
        } catch {
            throw StrataError.recordCoding(reason: "\(error)")
        }
        guard let state else {
            throw StrataError.invalidSchema(reason: "a concurrent transform (mapConcurrently) cannot insert records; use map")
        }
        guard let transaction else {
            return RecordID(rawValue: try state.dryRunInsert(record, entityID: encoded.entityID, bytes: encoded.bytes))
        }
        guard state.insertable.contains(encoded.entityID) else {
            throw StrataError.invalidSchema(reason: "a transform inserted a \(Record.entityName), an entity the old version has "
                + "and no transform of this stage rewrites; insert only into new entities or a transform's target")
        }
        return RecordID(rawValue: try state.insert(encoded.bytes, entityID: encoded.entityID, transaction: transaction))
    }

    /// A new record's bytes with every identifier a dry run handed out replaced by the
    /// identifier of the record the dry run was given, inserted (or found) now; nil when the
    /// record holds none. Costs nothing until a dry run of this process has handed one out.
    func resolvingDryRunIDs(in bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        guard !isDryRun, DryRunInserts.shared.handedOut.load(ordering: .relaxed) else { return nil }
        var values: [UInt32: Value]
        do { values = try RecordCodec.decode(bytes) } catch { throw StrataError.recordCoding(reason: "\(error)") }
        var changed = false
        for (property, value) in values {
            guard case .references(let ids) = value, ids.contains(where: DryRunInserts.isDryRunID) else { continue }
            var resolved: [UInt64] = []
            for id in ids {
                let real = DryRunInserts.isDryRunID(id) ? try resolveDryRunID(id) : id
                if !resolved.contains(real) { resolved.append(real) }
            }
            values[property] = .references(resolved)
            changed = true
        }
        guard changed else { return nil }
        let bytes = RecordCodec.encode(values, keepingNullFields: true)
        if (resolved?.count ?? 0) < bytes.count {
            resolved?.deallocate()
            resolved = .allocate(byteCount: max(bytes.count, 256), alignment: 8)
        }
        guard let resolved else { return nil }
        resolved.copyBytes(from: bytes)
        return UnsafeRawBufferPointer(rebasing: resolved[..<bytes.count])
    }

    /// The identifier, in this run, of the record a dry run handed out `id` for.
    private func resolveDryRunID(_ id: UInt64) throws -> UInt64 {
        guard let state, transaction != nil else {
            throw StrataError.invalidSchema(reason: "record id \(id) was handed out by a dry run's MigrationWriter and is not stored; "
                + "a concurrent transform cannot insert — use map, or writer.insert's insert-or-find instead of keeping ids")
        }
        guard let record = DryRunInserts.shared.record(for: id) else {
            throw StrataError.invalidSchema(reason: "record id \(id) was handed out by a dry run's MigrationWriter of another "
                + "process or an earlier dry run and no record stands behind it; do not keep ids from writer.insert between runs — "
                + "insert with a unique attribute and writer.insert finds the record")
        }
        if let real = state.resolvedDryRunIDs[id] { return real }
        func insertOpened<R: PersistentRecord>(_ record: R) throws -> UInt64 { try insert(record).rawValue }
        let real = try insertOpened(record)
        state.resolvedDryRunIDs[id] = real
        return real
    }
}

/// What a stage's `MigrationWriter`s share across its batches (each batch has a writer of its
/// own): which entities they may insert into, the identifier counters of the new version's
/// hierarchies, and the unique values of the records the stage wrote. Used on the migration's
/// thread only.
package final class MigrationInsertState {
    /// Entity ids the stage may insert into (new in the target version, or a transform's target).
    let insertable: Set<UInt32>
    /// Per entity of the new version, the root of its hierarchy.
    private let rootOf: [UInt32: UInt32]
    /// Per hierarchy root, its entities.
    private let members: [UInt32: [UInt32]]
    /// Per hierarchy root, the lowest identifier the writer may hand out: above every
    /// identifier the hierarchy's records keep (its entities' old trees, and the sources of
    /// transforms writing into it).
    private let base: [UInt32: UInt64]
    /// Per entity with unique attributes: each attribute's id and the key of records lacking it.
    private let uniqueAttributes: [UInt32: [(attributeID: UInt32, defaultKey: [UInt8])]]
    /// Per entity, per unique attribute, full key → record id: the records the stage wrote into
    /// the entity's shadow tree, read once per run when first needed, then kept up to date.
    private var uniqueValues: [UInt32: [UInt32: [[UInt8]: UInt64]]] = [:]
    /// A dry run's identifiers resolved in this run.
    var resolvedDryRunIDs: [UInt64: UInt64] = [:]
    private let schemaVersion: UInt32

    /// The state of a stage from `old` to `new` (bindings), whose transforms write `targets`
    /// reading `sources` (entity ids, pairwise), on a store whose root is `root`.
    package init(old: CatalogVersion, new: SchemaBinding, sources: [UInt32], targets: [UInt32], root: StoreRoot) {
        let version = new.version
        insertable = Set(targets).union(version.entities.map(\.id).filter { old.entity(id: $0) == nil })
        var rootOf: [UInt32: UInt32] = [:], members: [UInt32: [UInt32]] = [:]
        for entity in version.entities {
            let top = version.ancestry(ofEntity: entity.id).first?.id ?? entity.id
            rootOf[entity.id] = top
            members[top, default: []].append(entity.id)
        }
        var base: [UInt32: UInt64] = [:]
        for (top, entities) in members {
            var lowest: UInt64 = 1
            for entity in entities where old.entity(id: entity) != nil { lowest = max(lowest, root.entities[entity]?.nextRowID ?? 1) }
            for (source, target) in zip(sources, targets) where entities.contains(target) {
                lowest = max(lowest, root.entities[source]?.nextRowID ?? 1)
            }
            base[top] = lowest
        }
        var uniques: [UInt32: [(attributeID: UInt32, defaultKey: [UInt8])]] = [:]
        for entity in version.entities {
            let attributes = version.resolvedAttributes(ofEntity: entity.id).filter(\.isUnique)
            if !attributes.isEmpty { uniques[entity.id] = attributes.map { ($0.id, IndexKey.encode($0.defaultValue)) } }
        }
        self.rootOf = rootOf
        self.members = members
        self.base = base
        uniqueAttributes = uniques
        schemaVersion = new.versionID
    }

    /// Inserts `bytes` into `entityID`'s shadow tree — or updates the record of the stage
    /// holding one of its unique values — and returns the record's id.
    func insert(_ bytes: [UInt8], entityID: UInt32, transaction: RecordTransaction) throws -> UInt64 {
        let tree = transaction.shadowTree(for: entityID, schemaVersion: schemaVersion)
        let keys = try uniqueKeys(bytes, entityID: entityID)
        if !keys.isEmpty {
            try loadUniqueValues(of: entityID, from: tree)
            var found: UInt64?
            for (attributeID, key) in keys {
                guard let id = uniqueValues[entityID]?[attributeID]?[key] else { continue }
                if let found, found != id {
                    throw StrataError.uniqueConstraintViolation(entity: "#\(entityID)", attribute: "#\(attributeID)",
                                                                existing: "records \(found) and \(id) of this migration")
                }
                found = id
            }
            if let found {
                try translatingErrors { _ = try tree.update(found, bytes: bytes) }
                remember(keys, id: found, entityID: entityID)
                return found
            }
        }
        let id = allocate(entityID, transaction: transaction)
        try translatingErrors { try tree.insert(id, bytes: bytes) }
        if !keys.isEmpty { remember(keys, id: id, entityID: entityID) }
        return id
    }

    /// Whether records delivered into `entityID`'s shadow tree must be remembered by their
    /// unique values (the writer has looked some up).
    func tracksDeliveries(into entityID: UInt32) -> Bool { !uniqueValues.isEmpty && uniqueValues[entityID] != nil }

    /// A record a transform delivered into a tracked entity's shadow tree.
    func delivered(_ bytes: UnsafeRawBufferPointer, id: UInt64, entityID: UInt32) throws {
        remember(try uniqueKeys(Array(bytes), entityID: entityID), id: id, entityID: entityID)
    }

    /// The next identifier of `entityID`'s hierarchy: above the hierarchy's base and every id
    /// its shadow trees hold or handed out (the marker keeps the counters: a resumed stage
    /// goes on from them).
    private func allocate(_ entityID: UInt32, transaction: RecordTransaction) -> UInt64 {
        let top = rootOf[entityID] ?? entityID
        var next = base[top] ?? 1
        for member in members[top] ?? [entityID] {
            next = max(next, transaction.migration?.shadows[member]?.nextRowID ?? 0)
        }
        let id = next
        transaction.updateMigration { $0.shadows[entityID]?.nextRowID = id + 1 }
        return id
    }

    private func uniqueKeys(_ bytes: [UInt8], entityID: UInt32) throws -> [(UInt32, [UInt8])] {
        guard let uniques = uniqueAttributes[entityID] else { return [] }
        return try translatingErrors {
            try uniques.compactMap { attributeID, defaultKey in
                let key = try RecordSnapshot.indexKey(of: attributeID, defaultKey: defaultKey, in: bytes, entityID: entityID)
                return key == IndexKey.nullKey ? nil : (attributeID, key)
            }
        }
    }

    private func remember(_ keys: [(UInt32, [UInt8])], id: UInt64, entityID: UInt32) {
        for (attributeID, key) in keys { uniqueValues[entityID, default: [:]][attributeID, default: [:]][key] = id }
    }

    /// Reads the unique values of the records already in `entityID`'s shadow tree (written by
    /// a transform, by earlier batches, or before a crash), once per run.
    private func loadUniqueValues(of entityID: UInt32, from tree: RecordTreeWriter) throws {
        guard uniqueValues[entityID] == nil else { return }
        uniqueValues[entityID] = [:]
        try translatingErrors {
            try tree.scan { id, bytes in
                remember(try uniqueKeys(bytes, entityID: entityID), id: id, entityID: entityID)
                return true
            }
        }
    }

    // MARK: Dry runs

    /// The unique values of the records a dry run's writer was given → their dry-run ids.
    private var dryRunUnique: [UInt32: [UInt32: [[UInt8]: UInt64]]] = [:]

    /// A dry run's insert: nothing written; an id from the dry-run range, the same for records
    /// sharing a unique value (as the real run's insert or find).
    func dryRunInsert(_ record: any PersistentRecord, entityID: UInt32, bytes: [UInt8]) throws -> UInt64 {
        let keys = try uniqueKeys(bytes, entityID: entityID)
        for (attributeID, key) in keys {
            if let id = dryRunUnique[entityID]?[attributeID]?[key] { return id }
        }
        let id = DryRunInserts.shared.register(record)
        for (attributeID, key) in keys { dryRunUnique[entityID, default: [:]][attributeID, default: [:]][key] = id }
        return id
    }
}

/// The records dry runs of this process handed identifiers out for (`MigrationWriter`):
/// identifiers from 2⁶² up, which no store reaches, each standing for the record the dry run's
/// writer was given, so a real run can insert it if app code kept the identifier.
package final class DryRunInserts: Sendable {
    static let shared = DryRunInserts()
    /// The first identifier a dry run hands out.
    static let firstID: UInt64 = 1 << 62
    /// Whether any dry run of the process handed an identifier out (until then, new records
    /// are not searched for one).
    let handedOut = Atomic<Bool>(false)
    /// The records, by identifier minus `firstID`: at most a dry run's sample's inserts.
    private let records = Lock<[UncheckedRecord]>([])

    /// A record kept across threads: app values a dry run's transform built, read once more
    /// on the migration's thread of a later run.
    private struct UncheckedRecord: @unchecked Sendable { let record: any PersistentRecord }

    static func isDryRunID(_ id: UInt64) -> Bool { id >= firstID }

    func register(_ record: any PersistentRecord) -> UInt64 {
        let id = records.withLock { records in
            records.append(UncheckedRecord(record: record))
            return Self.firstID + UInt64(records.count - 1)
        }
        handedOut.store(true, ordering: .relaxed)
        return id
    }

    func record(for id: UInt64) -> (any PersistentRecord)? {
        records.withLock { records in
            let index = id - Self.firstID
            return index < UInt64(records.count) ? records[Int(index)].record : nil
        }
    }
}
