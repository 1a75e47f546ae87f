import StrataFormat
import StrataRecords
import StrataSchema

/// The changes of one save applied to the record graph inside a record-store transaction: the
/// one place where inverse relationships are kept consistent, delete rules run and references
/// are checked. `Context.save()` stages all its changes and commits once; `Store.write`'s
/// transaction commits after each change, so its memory stays bounded.
///
/// `commit()` works in four steps, on an overlay of the records it touches (trees are written
/// only in the last step, so every earlier read sees the state before the save):
///
/// 1. Inserts and updates replace their records in the overlay.
/// 2. For each of them (ascending entity id, then record id), each relationship whose value
///    differs from the stored one is *applied*: references removed by the change are removed
///    from the other side's inverse; references added must exist (`danglingReference`) and are
///    added to the inverse — setting a to-one inverse first detaches the record it referred to.
///    A relationship the change did not touch (equal to the stored value) is left as the
///    overlay has it, so a record updated from a copy read before this save does not undo
///    inverses maintained for other records of the save (a copy read before an earlier save
///    does: a known issue, Architecture.md "Relationships"); when two
///    changes of one save contradict each other, the later one wins.
/// 3. Deletes: the records to delete are the staged ones plus, recursively, what their cascade
///    relationships refer to (cycles end: each record is visited once). Then a deny
///    relationship that refers to a record outside that set refuses the save
///    (`deleteDenied`); nullify relationships remove the deleted records from their
///    destinations' inverse; no-action relationships leave the references in place.
/// 4. Every record changed by maintenance whose required to-one relationship became empty
///    refuses the save (`requiredRelationship`); then the overlay is written.
///
/// Relationships without an inverse are checked for existence when set, never maintained: a
/// reference to a record deleted later stays in place (as with no action).
///
/// Not thread-safe: used inside one write transaction's body, on its thread.
final class GraphTransaction {
    /// A record: its concrete entity (the tree holding it) and its id.
    private struct Key: Hashable, Comparable {
        var entityID: UInt32
        var id: UInt64
        static func < (a: Key, b: Key) -> Bool { (a.entityID, a.id) < (b.entityID, b.id) }
    }

    /// A record in the overlay.
    private enum Entry {
        /// Bytes as the app's record encoded them (no relationship changed by maintenance).
        case bytes([UInt8])
        /// Values by property id, changed by maintenance.
        case fields([UInt32: Value])
        case deleted
    }

    private let store: Store
    let transaction: RecordTransaction
    private var model: EntityModel { store.model }

    // Unchecked: used by the transaction's thread only, and read on every insert (`isIdle`),
    // or on every update and delete (`locate`, `reset`), where the runtime's exclusivity
    // checks cost more than the change's other bookkeeping (~100 instructions each).
    @exclusivity(unchecked) private var upserts: [(key: Key, bytes: [UInt8], isNew: Bool)] = []
    @exclusivity(unchecked) private var deletes: [Key] = []
    @exclusivity(unchecked) private var overlay: [Key: Entry] = [:]
    /// Stored values read so far (nil: no such record in the tree).
    @exclusivity(unchecked) private var storedCache: [Key: [UInt32: Value]?] = [:]
    @exclusivity(unchecked) private var inserted: Set<Key> = []
    @exclusivity(unchecked) private var dirty: Set<Key> = []

    init(store: Store, transaction: RecordTransaction) {
        self.store = store
        self.transaction = transaction
    }

    /// Whether nothing is staged (always so between the changes of a `Store.write`, which
    /// commits each one).
    var isIdle: Bool { upserts.isEmpty && deletes.isEmpty }

    /// Stages an insert (`isNew`) or a full replacement of record `id` of entity `entityID`
    /// (its concrete entity).
    /// Makes room for `count` more staged inserts and updates.
    func reserveUpserts(_ count: Int) {
        upserts.reserveCapacity(upserts.count + count)
    }

    func stageUpsert(entityID: UInt32, id: UInt64, bytes: [UInt8], isNew: Bool) {
        upserts.append((Key(entityID: entityID, id: id), bytes, isNew))
    }

    /// Inserts record `id` of `entityID` at once, when the entity has no relationships (so
    /// nothing is maintained and staging would only add work: the bulk-insert path); returns
    /// false, doing nothing, otherwise.
    func insertNow(entityID: UInt32, id: UInt64, bytes: [UInt8]) throws -> Bool {
        guard upserts.isEmpty, deletes.isEmpty, model.relationships(of: entityID).isEmpty else { return false }
        try insert(Key(entityID: entityID, id: id), bytes, into: tree(entityID))
        return true
    }

    /// Replaces record `id` of entity `entityID` at once — true, or false when there is no such
    /// record — when nothing is staged and the entity has neither relationships nor
    /// sub-entities: nothing to maintain, and the record can only be in the entity's own tree,
    /// so locating, staging and committing it would only add work (`Store.write`'s updates).
    /// Nil, doing nothing, otherwise.
    func updateNow(entityID: UInt32, id: UInt64, bytes: [UInt8]) throws -> Bool? {
        guard isIdle, standsAlone(entityID) else { return nil }
        return try store.translating { try tree(entityID).update(id, bytes: bytes) }
    }

    /// Deletes record `id` of entity `entityID` at once — true, or false when there is no such
    /// record — under the conditions of `updateNow`: with no relationships there are no delete
    /// rules to run and no inverses to maintain. Nil, doing nothing, otherwise.
    func deleteNow(entityID: UInt32, id: UInt64) throws -> Bool? {
        guard isIdle, standsAlone(entityID) else { return nil }
        return try store.translating { try tree(entityID).delete(id) }
    }

    /// Whether `entityID` has no relationships and no sub-entities.
    private func standsAlone(_ entityID: UInt32) -> Bool {
        model.relationships(of: entityID).isEmpty && model.family(of: entityID).count == 1
    }

    /// Stages the deletion of record `id` of entity `entityID` (its concrete entity).
    func stageDelete(entityID: UInt32, id: UInt64) {
        deletes.append(Key(entityID: entityID, id: id))
    }

    /// The concrete entity of record `id` as this transaction sees it, searching `entityID`
    /// and its sub-entities; nil when there is none.
    func locate(entityID: UInt32, id: UInt64) throws -> UInt32? {
        try locate(entityID, id)?.entityID
    }

    /// The stored bytes of record `id` of its concrete entity `entityID`, or nil.
    func storedBytes(entityID: UInt32, id: UInt64) throws -> [UInt8]? {
        try store.translating { try tree(entityID).get(id) }
    }

    /// Applies the staged changes (see the type's description) and writes them; then the
    /// transaction is empty again and may stage more.
    /// - Throws: `StrataError.danglingReference`, `.deleteDenied`, `.requiredRelationship`,
    ///   `.recordNotFound` (an update of a record deleted meanwhile), `.duplicateRecordID`,
    ///   `.recordCoding`, storage errors. The record-store transaction must then be abandoned.
    func commit() throws {
        defer { reset() }
        try redirectRacingInserts()
        if !upsertsHaveRelationships(), deletes.allSatisfy({ model.relationships(of: $0.entityID).isEmpty }), changesAreDisjoint() {
            return try writeDirect()  // nothing to maintain (bulk inserts, plain records): no overlay
        }
        for upsert in upserts {
            overlay[upsert.key] = .bytes(upsert.bytes)
            dirty.insert(upsert.key)
            if upsert.isNew { inserted.insert(upsert.key) }
        }
        for upsert in upserts.sorted(by: { $0.key < $1.key }) where !model.relationships(of: upsert.key.entityID).isEmpty {
            try applyRelationships(of: upsert.key, written: try decode(upsert.bytes, of: upsert.key))
        }
        try applyDeletes()
        try checkRequiredRelationships()
        try write()
    }

    /// An insert of an entity with relationships whose unique value another context saved
    /// since the insert was staged becomes an update of that record (upsert), before any
    /// inverse is maintained — as `insert(_:_:into:)` does at the end for entities without
    /// relationships. Not when the save itself changes that record, or another change of the
    /// save refers to the inserted record's id (that reference would name an id that never
    /// exists): the tree then refuses the duplicate value.
    private func redirectRacingInserts() throws {
        // Whether an entity can need it is looked up once per run of its upserts (they come
        // grouped by entity): a bulk insert pays one lookup, not one per record.
        var checked: UInt32?, eligible = false
        for index in upserts.indices where upserts[index].isNew {
            let key = upserts[index].key
            if key.entityID != checked {
                checked = key.entityID
                eligible = store.engine.uniqueAttributes[key.entityID] != nil && !model.relationships(of: key.entityID).isEmpty
            }
            guard eligible,
                  let existing = try store.translating({
                      try transaction.uniqueMatch(entityID: key.entityID, schemaVersion: store.binding.versionID, bytes: upserts[index].bytes)
                  }), existing != key.id else { continue }
            let target = Key(entityID: key.entityID, id: existing)
            guard !upserts.contains(where: { $0.key == target }), !deletes.contains(target), !(try isReferenced(key)) else { continue }
            // The id the app was given is used up, as an insert's: never handed out again.
            transaction.reserve(key.id, for: model.rootID(of: key.entityID))
            upserts[index] = (target, upserts[index].bytes, false)
        }
    }

    /// Whether another staged change's relationships refer to record `key`.
    private func isReferenced(_ key: Key) throws -> Bool {
        let family = Set(model.family(of: model.rootID(of: key.entityID)))
        for upsert in upserts where upsert.key != key {
            let relationships = model.relationships(of: upsert.key.entityID).filter { family.contains($0.destinationID) }
            guard !relationships.isEmpty else { continue }
            let values = try decode(upsert.bytes, of: upsert.key)
            if relationships.contains(where: { Self.ids(values[$0.id]).contains(key.id) }) { return true }
        }
        return false
    }

    /// Whether an entity of the staged upserts has relationships: looked up once per run of
    /// one entity's upserts (they come grouped by entity), no upsert copied.
    private func upsertsHaveRelationships() -> Bool {
        var checked: UInt32?
        for index in upserts.indices {
            let entityID = upserts[index].key.entityID
            if entityID == checked { continue }
            checked = entityID
            if !model.relationships(of: entityID).isEmpty { return true }
        }
        return false
    }

    // MARK: Steps

    private func applyRelationships(of key: Key, written: [UInt32: Value]) throws {
        let stored = try storedFields(key) ?? [:]
        for relationship in model.relationships(of: key.entityID) {
            let before = Self.ids(stored[relationship.id]), after = Self.ids(written[relationship.id])
            if before == after { continue }
            let current = Self.ids(try fields(key)[relationship.id])
            switch relationship.cardinality {
            case .toOne:
                // The change's value wins over what maintenance set earlier in this save.
                let detached = Set(before + current).subtracting(after)
                set(key, relationship, after)
                for id in detached.sorted() { try unlinkInverse(from: key, relationship, id) }
                for id in after { try linkInverse(from: key, relationship, id) }
            case .toMany:
                let beforeSet = Set(before), afterSet = Set(after)
                let removed = Set(before.filter { !afterSet.contains($0) })
                let added = after.filter { !beforeSet.contains($0) }
                let currentSet = Set(current)
                set(key, relationship, current.filter { !removed.contains($0) } + added.filter { !currentSet.contains($0) })
                for id in removed.sorted() { try unlinkInverse(from: key, relationship, id) }
                for id in added { try linkInverse(from: key, relationship, id) }
            }
        }
    }

    private func applyDeletes() throws {
        guard !deletes.isEmpty else { return }
        var doomed: [Key] = []
        var doomedSet: Set<Key> = []
        var queue = deletes.sorted()
        var next = 0
        while next < queue.count {
            let key = queue[next]
            next += 1
            guard doomedSet.insert(key).inserted else { continue }
            doomed.append(key)
            for relationship in model.relationships(of: key.entityID) where relationship.deleteRule == .cascade {
                for id in Self.ids(try fields(key)[relationship.id]) {
                    if let destination = try locate(relationship.destinationID, id) { queue.append(destination) }
                }
            }
        }
        for key in doomed {
            for relationship in model.relationships(of: key.entityID) where relationship.deleteRule == .deny {
                var survivors = 0
                for id in Self.ids(try fields(key)[relationship.id]) {
                    if let destination = try locate(relationship.destinationID, id), !doomedSet.contains(destination) { survivors += 1 }
                }
                if survivors > 0 { throw StrataError.deleteDenied(record: describe(key), relationship: relationship.name, count: survivors) }
            }
        }
        for key in doomed {
            for relationship in model.relationships(of: key.entityID) where relationship.deleteRule == .nullify {
                guard let inverse = model.inverse(of: relationship) else { continue }
                for id in Self.ids(try fields(key)[relationship.id]) {
                    if let destination = try locate(relationship.destinationID, id), !doomedSet.contains(destination) {
                        try remove(key.id, from: destination, inverse)
                    }
                }
            }
        }
        for key in doomed {
            overlay[key] = .deleted
            dirty.insert(key)
        }
    }

    private func checkRequiredRelationships() throws {
        for key in dirty.sorted() {
            guard case .fields(let values)? = overlay[key] else { continue }
            for relationship in model.relationships(of: key.entityID) where relationship.cardinality == .toOne && !relationship.isOptional {
                if values[relationship.id] == nil {
                    throw StrataError.requiredRelationship(record: describe(key), relationship: relationship.name)
                }
            }
        }
    }

    /// The order records are written in, per entity: deletes, then updates, then inserts, so a
    /// unique value freed by a delete or an update can be taken by an insert of the same save.
    private func rank(_ key: Key) -> Int {
        switch overlay[key] {
        case .deleted?, nil: 0
        default: inserted.contains(key) ? 2 : 1
        }
    }

    /// Inserts a new record — or, when a unique value of it is held by a record another context
    /// saved since the insert was staged, updates that record instead (upsert). A record with
    /// relationships was redirected before its inverses were maintained
    /// (`redirectRacingInserts`), or cannot be: the tree then refuses the duplicate value.
    private func insert(_ key: Key, _ bytes: [UInt8], into tree: RecordTreeWriter) throws {
        transaction.reserve(key.id, for: model.rootID(of: key.entityID))
        if store.engine.uniqueAttributes[key.entityID] != nil, model.relationships(of: key.entityID).isEmpty,
           let existing = try transaction.uniqueMatch(entityID: key.entityID, schemaVersion: store.binding.versionID, bytes: bytes) {
            _ = try tree.update(existing, bytes: bytes)
        } else {
            try tree.insert(key.id, bytes: bytes)
        }
    }

    private func write() throws {
        let schemaVersion = store.binding.versionID
        try store.translating {
            for key in dirty.sorted(by: { ($0.entityID, rank($0), $0.id) < ($1.entityID, rank($1), $1.id) }) {
                let tree = transaction.tree(for: key.entityID, schemaVersion: schemaVersion)
                let bytes: [UInt8]
                switch overlay[key] {
                case .deleted?, nil:
                    if !inserted.contains(key) { _ = try tree.delete(key.id) }
                    continue
                case .bytes(let written)?: bytes = written
                case .fields(let values)?: bytes = RecordCodec.encode(values, keepingNullFields: true)
                }
                if inserted.contains(key) {
                    try insert(key, bytes, into: tree)
                } else if try !tree.update(key.id, bytes: bytes) {
                    throw StrataError.recordNotFound("\(describe(key)) (deleted by another context)")
                }
            }
        }
    }

    /// Whether no record is both deleted and inserted or updated by the staged changes (always
    /// so for `Context.save()`, which keeps one change per record, and `Store.write`, which
    /// commits each change): else the general path decides (a delete wins).
    private func changesAreDisjoint() -> Bool {
        guard !deletes.isEmpty, !upserts.isEmpty else { return true }
        let deleted = Set(deletes)
        return !upserts.contains { deleted.contains($0.key) }
    }

    /// Writes the staged changes as they are, when there is nothing to maintain (no entity of
    /// theirs has relationships): per entity in ascending id order, its deletes, then its
    /// updates, then its inserts, each by id — the order `write()` gives them (`rank`: a unique
    /// value freed by a delete or an update can be taken by an insert of the same save). A
    /// record already deleted (by another context) is skipped; an update of one throws. The
    /// entity's updates replace a leaf's records in one pass.
    private func writeDirect() throws {
        let schemaVersion = store.binding.versionID
        // Staged in this order already (`Context.write`): then only checked, not sorted (no
        // copy of each upsert).
        if deletes.indices.dropFirst().contains(where: { deletes[$0] < deletes[$0 - 1] }) { deletes.sort() }
        func order(_ index: Int) -> (UInt32, Int, UInt64) {
            (upserts[index].key.entityID, upserts[index].isNew ? 1 : 0, upserts[index].key.id)
        }
        if upserts.indices.dropFirst().contains(where: { order($0) < order($0 - 1) }) {
            upserts.sort { ($0.key.entityID, $0.isNew ? 1 : 0, $0.key.id) < ($1.key.entityID, $1.isNew ? 1 : 0, $1.key.id) }
        }
        try store.translating {
            var nextDelete = 0, nextUpsert = 0
            while nextDelete < deletes.count || nextUpsert < upserts.count {
                let entityID = min(nextDelete < deletes.count ? deletes[nextDelete].entityID : .max,
                                   nextUpsert < upserts.count ? upserts[nextUpsert].key.entityID : .max)
                let tree = transaction.tree(for: entityID, schemaVersion: schemaVersion)
                while nextDelete < deletes.count, deletes[nextDelete].entityID == entityID {
                    _ = try tree.delete(deletes[nextDelete].id)
                    nextDelete += 1
                }
                var end = nextUpsert
                while end < upserts.count, upserts[end].key.entityID == entityID, !upserts[end].isNew { end += 1 }
                if end > nextUpsert {
                    let first = nextUpsert
                    if let missing = try tree.update(count: end - first, id: { upserts[first + $0].key.id },
                                                     bytes: { upserts[first + $0].bytes }) {
                        throw StrataError.recordNotFound("\(describe(Key(entityID: entityID, id: missing))) (deleted by another context)")
                    }
                    nextUpsert = end
                }
                while nextUpsert < upserts.count, upserts[nextUpsert].key.entityID == entityID {
                    try insert(upserts[nextUpsert].key, upserts[nextUpsert].bytes, into: tree)
                    nextUpsert += 1
                }
            }
        }
    }

    private func reset() {
        upserts.removeAll()
        deletes.removeAll()
        overlay.removeAll()
        storedCache.removeAll()
        inserted.removeAll()
        dirty.removeAll()
    }

    // MARK: Links

    /// After `source.relationship` gained a reference to `id`: the record must exist, and its
    /// inverse refers back to `source` (a to-one inverse first lets go of its previous record).
    private func linkInverse(from source: Key, _ relationship: CatalogRelationship, _ id: UInt64) throws {
        guard let destination = try locate(relationship.destinationID, id) else {
            throw StrataError.danglingReference(record: describe(source), relationship: relationship.name,
                                                destination: "\(model.name(of: relationship.destinationID))#\(id)")
        }
        guard let inverse = model.inverse(of: relationship) else { return }
        let current = Self.ids(try fields(destination)[inverse.id])
        switch inverse.cardinality {
        case .toMany:
            if !current.contains(source.id) { set(destination, inverse, current + [source.id]) }
        case .toOne:
            guard current != [source.id] else { return }
            set(destination, inverse, [source.id])
            for previous in current where previous != source.id {
                if let partner = try locate(inverse.destinationID, previous) { try remove(destination.id, from: partner, relationship) }
            }
        }
    }

    /// After `source.relationship` lost its reference to `id`: the inverse no longer refers back.
    private func unlinkInverse(from source: Key, _ relationship: CatalogRelationship, _ id: UInt64) throws {
        guard let inverse = model.inverse(of: relationship), let destination = try locate(relationship.destinationID, id) else { return }
        try remove(source.id, from: destination, inverse)
    }

    private func remove(_ id: UInt64, from key: Key, _ relationship: CatalogRelationship) throws {
        let current = Self.ids(try fields(key)[relationship.id])
        if current.contains(id) { set(key, relationship, current.filter { $0 != id }) }
    }

    /// Sets a relationship's value in the overlay (the record's values must be loaded).
    private func set(_ key: Key, _ relationship: CatalogRelationship, _ ids: [UInt64]) {
        guard case .fields(var values)? = overlay[key] else { return }
        values[relationship.id] = ids.isEmpty ? nil : .references(ids)
        overlay[key] = .fields(values)
        dirty.insert(key)
    }

    // MARK: Reading

    /// The record with id `id` in `entityID`'s family, as the overlay sees it; nil when it does
    /// not exist or is deleted.
    private func locate(_ entityID: UInt32, _ id: UInt64) throws -> Key? {
        for member in model.family(of: entityID) {
            let key = Key(entityID: member, id: id)
            switch overlay[key] {
            case .deleted?: continue
            case .bytes?, .fields?: return key
            case nil: if try isStored(key) { return key }
            }
        }
        return nil
    }

    /// Whether the record is stored (as before this commit), told without reading its values
    /// unless they were read already: locating a record to update or delete it does not
    /// read, let alone decode, a large value it holds.
    private func isStored(_ key: Key) throws -> Bool {
        if let cached = storedCache[key] { return cached != nil }
        return try store.translating { try tree(key.entityID).contains(key.id) }
    }

    /// The record's current values, loaded into the overlay as fields so they can change.
    private func fields(_ key: Key) throws -> [UInt32: Value] {
        switch overlay[key] {
        case .fields(let values)?: return values
        case .bytes(let bytes)?:
            let values = try decode(bytes, of: key)
            overlay[key] = .fields(values)
            return values
        case .deleted?: return [:]
        case nil:
            let values = try storedFields(key) ?? [:]
            overlay[key] = .fields(values)
            return values
        }
    }

    /// The record's values as stored before this commit; nil when it is not stored.
    private func storedFields(_ key: Key) throws -> [UInt32: Value]? {
        if let cached = storedCache[key] { return cached }
        let values = try storedBytes(entityID: key.entityID, id: key.id).map { try decode($0, of: key) }
        storedCache[key] = values
        return values
    }

    private func decode(_ bytes: [UInt8], of key: Key) throws -> [UInt32: Value] {
        do { return try RecordCodec.decode(bytes) } catch {
            throw StrataError.recordCoding(reason: "the stored record \(describe(key)) is corrupt: \(error.reason)")
        }
    }

    private func tree(_ entityID: UInt32) -> RecordTreeWriter {
        transaction.tree(for: entityID, schemaVersion: store.binding.versionID)
    }

    private func describe(_ key: Key) -> String { "\(model.name(of: key.entityID))#\(key.id)" }

    /// The ids a relationship value holds; none for an absent value (or, never written by
    /// Strata, a value of another kind).
    private static func ids(_ value: Value?) -> [UInt64] {
        if case .references(let ids)? = value { return ids }
        return []
    }
}
