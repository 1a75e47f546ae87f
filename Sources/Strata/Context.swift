import FoundationEssentials
import StrataRecords
import StrataSchema

/// A unit of work on a `Store` (SwiftData's `ModelContext`): insert, update and delete
/// records, read them back (changes included), then `save()` them all atomically — or
/// `rollback()` to forget them.
///
/// Reads see the latest saved state of the store plus this context's unsaved changes; each
/// read takes a consistent snapshot, so a read never sees part of another context's save.
///
/// Relationships (`RecordID` properties) are kept consistent by `save()`: it maintains
/// inverses and runs delete rules (see `Store`'s documentation and `StrataError`). Until then,
/// reads show exactly the values this context was given.
///
/// Unsaved changes are held in memory, encoded, until `save()` (about 300 bytes per small
/// record): for an import of many records, use `Store.write`, which writes records as they
/// come and keeps memory bounded whatever the transaction's size.
///
/// Not thread-safe: use a context from one thread or task at a time (make one per task).
public final class Context {
    /// The store this context works on.
    public let store: Store
    /// Who makes the changes; recorded with each save (the history journal will carry it).
    public var author: String?
    /// Set for the contexts of a migration stage's closures: `save()` leaves the changes for
    /// `saveWithStage(_:)`.
    var savesWithStage = false

    private enum Change: Sendable {
        case upsert([UInt8], isNew: Bool)
        case delete
    }

    /// Unsaved changes by entity id, then record id.
    private var changes: [UInt32: [UInt64: Change]] = [:]
    /// The unique values unsaved inserts and updates hold: entity id → attribute id → full
    /// index key → record id (so two inserts of one unique value in a context make one record).
    private var pendingUnique: [UInt32: [UInt32: [[UInt8]: UInt64]]] = [:]

    /// The snapshot every read uses, when the context reads one moment of the store (a
    /// `Store.read` transaction); nil: each read takes the latest snapshot.
    private let pinnedSnapshot: RecordSnapshot?
    /// With a pinned snapshot: the record type last read and the readers of its family.
    private var pinnedReaders: (type: ObjectIdentifier, readers: [RecordTreeReader])?
    /// The record type last decoded by `record(for:)`, with a decoding session on its
    /// entity's layout (which reuses one decoding state from record to record).
    private var lastDecoding: (type: ObjectIdentifier, session: RecordDecodingSession)?

    /// A context on `store`.
    public init(_ store: Store, author: String? = nil) {
        self.store = store
        self.author = author
        pinnedSnapshot = nil
    }

    /// A context that reads `snapshot` only (for `Store.ReadTransaction`, which never changes
    /// anything through it).
    init(_ store: Store, reading snapshot: RecordSnapshot) {
        self.store = store
        pinnedSnapshot = snapshot
    }

    /// The snapshot a read uses: the pinned one, else the latest.
    private func readSnapshot() throws -> RecordSnapshot {
        if let pinnedSnapshot { return pinnedSnapshot }
        return try store.snapshot()
    }

    /// Whether there are unsaved changes.
    public var hasChanges: Bool { changes.values.contains { !$0.isEmpty } }

    // MARK: Changing

    /// Inserts a record (saved by the next `save()`) and returns its new identifier.
    ///
    /// When a unique attribute of the record (non-null) holds the value a record already holds
    /// — saved, or inserted or updated in this context and not saved yet — that record is
    /// updated with the new values instead and its identifier returned (an upsert, as
    /// SwiftData does). If another context saves a record with the value before this context
    /// saves, `save()` updates that record instead (the identifier returned here then names
    /// no record).
    /// - Throws: `StrataError.unknownEntity` when the store's schema has no entity for the
    ///   type; `.abstractEntity` for an abstract entity; `.recordCoding` when a value cannot be
    ///   encoded; `.uniqueConstraintViolation` when the record's unique values match two
    ///   different records (nothing is changed).
    @discardableResult
    public func insert<Record: PersistentRecord>(_ record: Record) throws -> RecordID<Record> {
        let (entityID, bytes) = try store.encode(record)
        try store.checkInsertable(entityID)
        if let existing = try uniqueMatch(entityID, bytes, excluding: nil) {
            try setChange(.upsert(bytes, isNew: isUnsavedInsert(entityID, existing.id)), entityID, existing.id)
            return RecordID(rawValue: existing.id)
        }
        let id = store.allocateID(for: entityID)
        try setChange(.upsert(bytes, isNew: true), entityID, id)
        return RecordID(rawValue: id)
    }

    /// Replaces the values of an existing record. A record of a sub-entity updated through its
    /// parent's type keeps the values of its own (sub-entity) properties.
    /// - Throws: `StrataError.recordNotFound` when there is no such record (or it was deleted);
    ///   `.uniqueConstraintViolation` when another record (saved or unsaved) holds one of its
    ///   new unique values (nothing is changed).
    public func update<Record: PersistentRecord>(_ id: RecordID<Record>, to record: Record) throws {
        var (entityID, bytes) = try store.encode(record)
        guard let concreteID = try locate(entityID, id.rawValue) else { throw StrataError.recordNotFound(id.description) }
        if concreteID != entityID, let current = try currentBytes(concreteID, id.rawValue) {
            bytes = try store.merge(bytes, as: entityID, into: current)
            entityID = concreteID
        }
        if let other = try uniqueMatch(entityID, bytes, excluding: id.rawValue) {
            throw store.uniqueViolation(entityID: entityID, attributeID: other.attributeID, existing: "record \(other.id)")
        }
        try setChange(.upsert(bytes, isNew: isUnsavedInsert(entityID, id.rawValue)), entityID, id.rawValue)
    }

    /// Deletes a record (of the type's entity or a sub-entity); deleting a record that does not
    /// exist does nothing. Delete rules run when the deletion is saved.
    public func delete<Record: PersistentRecord>(_ id: RecordID<Record>) throws {
        guard let entityID = try locate(try store.entityID(of: Record.self), id.rawValue) else { return }
        if isUnsavedInsert(entityID, id.rawValue) {
            try setChange(nil, entityID, id.rawValue)  // never saved: nothing to delete
        } else {
            try setChange(.delete, entityID, id.rawValue)
        }
    }

    /// Deletes every record of `type` the predicate accepts (all of them when nil) and returns
    /// how many.
    @discardableResult
    public func delete<Record: PersistentRecord>(_ type: Record.Type, where predicate: Predicate<Record>? = nil) throws -> Int {
        let matches = try fetch(FetchDescriptor<Record>(predicate: predicate))
        for match in matches { try delete(match.id) }
        return matches.count
    }

    /// Writes every change atomically; afterwards other contexts see them all. With the store's
    /// `.durable` configuration the changes are on stable storage when this returns.
    /// In the same transaction, relationships are kept consistent: inverses follow the changed
    /// side, delete rules run (nullify, cascade, deny, no action), and every added reference
    /// must name an existing record.
    /// On error nothing is saved and the changes stay in the context.
    ///
    /// Deletes are written before updates, and updates before inserts, so a unique value freed
    /// by a delete or an update can be taken by an insert of the same save. Unique values are
    /// checked in the save's transaction: an insert whose unique value another context saved
    /// meanwhile updates that record instead (upsert).
    /// - Throws: `StrataError.deleteDenied`, `.danglingReference`, `.requiredRelationship`,
    ///   `.uniqueConstraintViolation` (an update repeating a unique value another record holds,
    ///   for instance one saved meanwhile by another context), `.recordNotFound` (a record
    ///   updated here was deleted by another context), storage errors.
    ///
    /// In a migration stage's `willMigrate` or `didMigrate`, saving is deferred: the changes
    /// stay in the context (its reads see them) and are committed with the stage, atomically
    /// with its progress.
    public func save() throws {
        guard hasChanges, !savesWithStage else { return }
        try Self.write(changes, to: store, author: author)
        changes.removeAll()
        pendingUnique.removeAll()
    }

    /// Writes every change atomically, as ``save()`` does, without blocking the caller's
    /// thread: the transaction — waiting for another writer and, with `.durable`, for the
    /// sync — runs on a thread of its own while the calling task is suspended. Runs in the
    /// caller's isolation (a context on the main actor stays there). A save that has started
    /// is not cancelled with its task: it completes or fails as a whole.
    /// - Throws: as ``save()``; on error nothing is saved and the changes stay in the context.
    nonisolated(nonsending) public func save() async throws {
        guard hasChanges, !savesWithStage else { return }
        let changes = changes, store = store, author = author
        try await store.runOffTheCooperativePool { try Self.write(changes, to: store, author: author) }
        self.changes.removeAll()
        pendingUnique.removeAll()
    }

    /// Writes `changes` in one record-store transaction (relationships maintained, unique
    /// values checked: see ``save()``).
    private static func write(_ changes: [UInt32: [UInt64: Change]], to store: Store, author: String?,
                              alsoWriting extra: ((RecordTransaction) throws -> Void)? = nil) throws {
        try store.checkWritable()
        try store.translating {
            try store.records.write(durability: store.configuration.durability.pageLogDurability) { transaction in
                store.beginJournal(transaction, author: author)
                // A migration stage's closures: their changes are summarized per entity.
                if extra != nil { transaction.history?.summarizes = true }
                let graph = GraphTransaction(store: store, transaction: transaction)
                for (entityID, entityChanges) in changes {
                    for (id, change) in entityChanges {
                        switch change {
                        case .upsert(let bytes, let isNew): graph.stageUpsert(entityID: entityID, id: id, bytes: bytes, isNew: isNew)
                        case .delete: graph.stageDelete(entityID: entityID, id: id)
                        }
                    }
                }
                try graph.commit()
                try extra?(transaction)
            }
        }
    }

    /// Commits every unsaved change and `extra`'s writes (the stage's progress) in one
    /// durable transaction — what a migration stage does with its closures' contexts.
    func saveWithStage(_ extra: @escaping (RecordTransaction) throws -> Void) throws {
        try Self.write(changes, to: store, author: author, alsoWriting: extra)
        changes.removeAll()
        pendingUnique.removeAll()
    }

    /// Forgets every unsaved change.
    public func rollback() {
        changes.removeAll()
        pendingUnique.removeAll()
    }

    // MARK: Reading

    /// The record with this identifier, unsaved changes included, or nil. A record of a
    /// sub-entity is read as `Record` (its parent-entity properties).
    @inlinable
    public func record<Record: PersistentRecord>(for id: RecordID<Record>) throws -> Record? {
        // Inlinable, so the app's compiler specializes this shell for `Record`: an unspecialized
        // generic function looks up `Optional<Record>`'s metadata on each call. The lookup is
        // not generic; only decoding is.
        var record: Record?
        try withRecordBytes(of: Record.self, id: id.rawValue) { record = try decodeRecord(Record.self, from: $0) }
        return record
    }

    /// Calls `body` with the bytes of record `id` of `type`'s entity or a sub-entity, as this
    /// context sees it (its unsaved change first), if there is one.
    @usableFromInline
    func withRecordBytes(of type: any PersistentRecord.Type, id: UInt64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let pinnedSnapshot {
            // A read transaction: nothing unsaved, one snapshot — the readers of the type's
            // family are resolved once and reused while the type stays the same.
            let key = ObjectIdentifier(type)
            if pinnedReaders?.type != key {
                let family = store.model.family(of: try store.entityID(of: type))
                pinnedReaders = (key, family.map { pinnedSnapshot.reader(for: $0) })
            }
            for reader in pinnedReaders?.readers ?? [] {
                if try translatingErrors({ try reader.withRecordBytes(id, body) }) { return }
            }
            return
        }
        let family = store.model.family(of: try store.entityID(of: type))
        for member in family {
            switch changes[member]?[id] {
            case .upsert(let bytes, _)?: return try bytes.withUnsafeBytes(body)
            case .delete?: return
            case nil: continue
            }
        }
        let snapshot = try readSnapshot()
        for member in family {
            if try translatingErrors({ try snapshot.reader(for: member).withRecordBytes(id, body) }) { return }
        }
    }

    /// A record decoded from its stored bytes. A decoding session for the type last decoded
    /// is kept, so reading records of one type one after another looks nothing up and
    /// allocates no decoding state per record.
    @usableFromInline
    func decodeRecord<Record: PersistentRecord>(_ type: Record.Type, from bytes: UnsafeRawBufferPointer) throws -> Record {
        let key = ObjectIdentifier(Record.self)
        let session: RecordDecodingSession
        if let last = lastDecoding, last.type == key {
            session = last.session
        } else {
            session = RecordDecodingSession(layout: store.binding.layout(of: try store.entityID(of: Record.self)))
            lastDecoding = (key, session)
        }
        return try store.decode(Record.self, from: bytes, session: session)
    }

    /// The records a descriptor selects, in its order, with their identifiers; unsaved changes
    /// included. Records of sub-entities are included, read as `Record`.
    /// - Throws: `.recordCoding` for a stored record that cannot be read as `Record`; an error
    ///   the predicate throws; storage errors.
    public func fetch<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>) throws -> [Identified<Record>] {
        let entityID = try store.entityID(of: Record.self)
        let family = store.model.family(of: entityID)  // the entity and its sub-entities
        var pending = changes[entityID] ?? [:]
        for member in family where member != entityID { pending.merge(changes[member] ?? [:]) { first, _ in first } }
        var results: [Identified<Record>] = []
        // Records the predicate's byte-level pre-filter rejects are never decoded.
        let condition = try descriptor.predicate.map { try store.condition(for: $0) } ?? .constant(true)
        let filters = condition.isUseful
        let (filter, prefixFilter) = Self.scanFilters(condition)
        var found = 0
        // Generic, so called only for records the pre-filter passes (it is not generic).
        func consider(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, decided: Bool?) throws {
            let record = try store.decode(Record.self, from: bytes)
            if decided == nil, let predicate = descriptor.predicate, try !predicate.evaluate(record) { return }
            results.append(Identified(id: RecordID(rawValue: id), record: record))
            found += 1
        }
        // Without a sort order or unsaved changes, results come in id order straight from the
        // scan, which can stop once offset + limit records matched.
        let wanted: Int? = descriptor.sortBy.isEmpty && pending.isEmpty
            ? descriptor.fetchLimit.map { max(0, $0) + max(0, descriptor.fetchOffset ?? 0) } : nil
        let snapshot = try readSnapshot()
        let unsaved = pending  // a constant: the per-record closures read it without exclusivity checks
        for member in family {
            let start = found  // ids ascend within one tree, not across trees
            let reader = snapshot.reader(for: member)
            // The records an index selects, in id order (as a scan yields them); nil: scan.
            var candidates: [UInt64]?
            if filters, let plan = store.indexPlan(for: member, condition: condition, in: snapshot) {
                let ids = try store.translating { try snapshot.indexedIDs(entityID: member, attributeID: plan.attributeID, range: plan.range) }
                // Reading most of the records one by one costs more than one scan.
                if ids.count <= Int(clamping: snapshot.root.entities[member]?.tree.count ?? 0) / 4 { candidates = ids.sorted() }
            }
            guard let candidates else {
                store.fetchPlans.scanned.add(1, ordering: .relaxed)
                // A filtered scan of a large tree with no limit reads and pre-filters its
                // leaves on several threads; records still arrive here in id order.
                let threads = store.configuration.scanThreads
                let large = (snapshot.root.entities[member]?.tree.count ?? 0) >= Self.parallelScanMinimum
                let parallel = filters && wanted == nil && threads > 1 && large
                if parallel { store.fetchPlans.scannedInParallel.add(1, ordering: .relaxed) }
                if let wanted, found - start >= wanted { continue }
                // An overflowed record the pre-filter rejects from its first bytes is not read.
                try translatingErrors {
                    try reader.scanFiltered(threads: parallel ? threads : 1, filter: filter, prefixFilter: prefixFilter) { id, bytes, decided in
                        guard unsaved.isEmpty || unsaved[id] == nil else { return true }
                        try consider(id, bytes, decided: decided)
                        if let wanted, found - start >= wanted { return false }
                        return true
                    }
                }
                continue
            }
            store.fetchPlans.indexed.add(1, ordering: .relaxed)
            for id in candidates {
                if let wanted, found - start >= wanted { break }
                guard unsaved.isEmpty || unsaved[id] == nil else { continue }
                let present: Void? = try translatingErrors {
                    try reader.withRecord(id) { bytes in
                        let decided = condition.evaluate(bytes)
                        if decided != false { try consider(id, bytes, decided: decided) }
                    }
                }
                guard present != nil else {
                    throw StrataError.corruption(file: "index of entity \(member)", offset: 0,
                                                 reason: "the index names record \(id), which does not exist")
                }
            }
        }
        for (id, change) in pending.sorted(by: { $0.key < $1.key }) {
            if case .upsert(let bytes, _) = change {
                try bytes.withUnsafeBytes { bytes in
                    let decided = filters ? condition.evaluate(bytes) : nil
                    if decided != false { try consider(id, bytes, decided: decided) }
                }
            }
        }
        // One tree read in id order, nothing unsaved, no sort keys: already in order.
        if !descriptor.sortBy.isEmpty || family.count > 1 || !pending.isEmpty {
            results.sort(by: descriptor.sortBy)
        }
        let offset = min(results.count, max(0, descriptor.fetchOffset ?? 0))
        let limit = descriptor.fetchLimit.map { max(0, $0) } ?? results.count
        return Array(results[offset...].prefix(limit))
    }

    /// A filtered scan's filters for `condition` (`RecordTreeReader.scanFiltered`): the
    /// pre-filter on a record's bytes and on an overflowed record's first bytes; without a
    /// useful condition, every record undecided and no prefix filter.
    static func scanFilters(_ condition: RecordCondition)
        -> (@Sendable (UnsafeRawBufferPointer) -> Bool?, (@Sendable (UnsafeRawBufferPointer, Int) -> RecordCondition.PrefixAnswer)?) {
        guard condition.isUseful else { return ({ _ in nil }, nil) }
        return ({ condition.evaluate($0) }, { condition.evaluate(prefix: $0, recordLength: $1) })
    }

    /// The fewest records a tree holds for a filtered fetch to scan it on several threads
    /// (`Store.Configuration.scanThreads`): below it, starting threads costs more than they save.
    static let parallelScanMinimum: UInt64 = 20_000

    /// How many records a descriptor selects — `fetch(descriptor).count`, unsaved changes
    /// included, records of sub-entities included — without reading what it need not:
    ///
    /// - Without a predicate, no record is read: the count is the sum of the record counts the
    ///   store root keeps for the entity and its sub-entities, adjusted for this context's
    ///   unsaved inserts (added) and deletes of saved records (subtracted); unsaved updates
    ///   change nothing.
    /// - With a predicate, only the records the byte-level pre-filter cannot decide are
    ///   decoded and given to the predicate; the others are counted from the fields the
    ///   predicate tests (a record stored in overflow pages is judged from its first bytes
    ///   when its tested fields come before its large values). When an index holds exactly the
    ///   records the predicate selects (a conjunction of comparisons of one indexed attribute
    ///   with constants, bounded on both sides or an equality), the count comes from the index
    ///   entries without reading records.
    ///
    /// The offset and limit apply as in `fetch`: `min(limit, max(0, total − offset))`; the sort
    /// order does not matter. Unlike `fetch`, a count does not fail on a stored record that
    /// cannot be read as `Record` when it needs no decoding to be counted.
    /// - Throws: `.recordCoding` for a record that must be decoded and cannot be read as
    ///   `Record`; an error the predicate throws; storage errors.
    public func fetchCount<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>) throws -> Int {
        let entityID = try store.entityID(of: Record.self)
        let family = store.model.family(of: entityID)  // the entity and its sub-entities
        var pending = changes[entityID] ?? [:]
        for member in family where member != entityID { pending.merge(changes[member] ?? [:]) { first, _ in first } }
        let snapshot = try readSnapshot()
        let condition = try descriptor.predicate.map { try store.condition(for: $0) } ?? .constant(true)
        let offset = max(0, descriptor.fetchOffset ?? 0)
        let total: Int
        if condition == .constant(true) {
            total = try countAll(family, pending: pending, in: snapshot)
        } else {
            // Enough matches for the limit: the trees need not be read further.
            let wanted = descriptor.fetchLimit.map { max(0, $0) + offset }
            total = try countMatches(descriptor, condition: condition, family: family, pending: pending, wanted: wanted, in: snapshot)
        }
        let count = max(0, total - offset)
        return descriptor.fetchLimit.map { min(count, max(0, $0)) } ?? count
    }

    /// How many records of `family` this context sees: the trees' counts from the store root,
    /// less the saved records that have an unsaved change (each looked up, not read), plus
    /// the unsaved inserts and updates.
    private func countAll(_ family: [UInt32], pending: [UInt64: Change], in snapshot: RecordSnapshot) throws -> Int {
        var total = family.reduce(0) { $0 + Int(clamping: snapshot.root.entities[$1]?.tree.count ?? 0) }
        for (id, change) in pending {
            if case .upsert = change { total += 1 }
            // An unsaved insert's id is new: no tree holds it.
            if case .upsert(_, true) = change { continue }
            for member in family where try translatingErrors({ try snapshot.reader(for: member).contains(id) }) {
                total -= 1
                break
            }
        }
        return total
    }

    /// How many records of `family` the predicate selects (as `fetch` sees them), counted
    /// without decoding the ones the pre-filter decides; stops reading the trees once
    /// `wanted` matched (the count is then cut to the limit anyway).
    private func countMatches<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>, condition: RecordCondition,
                                                        family: [UInt32], pending: [UInt64: Change], wanted: Int?,
                                                        in snapshot: RecordSnapshot) throws -> Int {
        let filters = condition.isUseful
        let (filter, prefixFilter) = Self.scanFilters(condition)
        var found = 0
        // Generic, so called only for records the pre-filter leaves undecided.
        func matches(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
            let record = try store.decode(Record.self, from: bytes)
            return try descriptor.predicate.map { try $0.evaluate(record) } ?? true
        }
        func consider(_ bytes: UnsafeRawBufferPointer, decided: Bool?) throws {
            if let decided { if decided { found += 1 } } else if try matches(bytes) { found += 1 }
        }
        let unsaved = pending  // a constant: the per-record closures read it without exclusivity checks
        for member in family {
            if let wanted, found >= wanted { break }
            let reader = snapshot.reader(for: member)
            let records = Int(clamping: snapshot.root.entities[member]?.tree.count ?? 0)
            if filters, let plan = store.indexPlan(for: member, condition: condition, in: snapshot) {
                // The index's entries are the answer (each re-checked only when its key was cut).
                if let index = snapshot.root.indexes[StoreRoot.IndexID(entityID: member, attributeID: plan.attributeID)],
                   Self.indexIsExact(for: condition, attributeID: plan.attributeID, range: plan.range, defaultKey: index.defaultKey) {
                    let scanned: Void? = try store.translating {
                        try snapshot.scanIndexExactly(entityID: member, attributeID: plan.attributeID, range: plan.range) { id, exact in
                            guard unsaved.isEmpty || unsaved[id] == nil else { return true }
                            if exact {
                                found += 1
                            } else {
                                try readCandidate(id, reader, member, condition) { try consider($0, decided: $1) }
                            }
                            return wanted.map { found < $0 } ?? true
                        }
                    }
                    if scanned != nil {
                        store.fetchPlans.indexed.add(1, ordering: .relaxed)
                        continue
                    }
                }
                let ids = try store.translating { try snapshot.indexedIDs(entityID: member, attributeID: plan.attributeID, range: plan.range) }
                // Reading most of the records one by one costs more than one scan.
                if ids.count <= records / 4 {
                    store.fetchPlans.indexed.add(1, ordering: .relaxed)
                    for id in ids.sorted() {
                        if let wanted, found >= wanted { break }
                        guard unsaved.isEmpty || unsaved[id] == nil else { continue }
                        try readCandidate(id, reader, member, condition) { try consider($0, decided: $1) }
                    }
                    continue
                }
            }
            store.fetchPlans.scanned.add(1, ordering: .relaxed)
            let threads = store.configuration.scanThreads
            let parallel = filters && wanted == nil && threads > 1 && UInt64(records) >= Self.parallelScanMinimum
            if parallel { store.fetchPlans.scannedInParallel.add(1, ordering: .relaxed) }
            // Records the pre-filter accepts are counted unread; an overflowed one is judged
            // from its first bytes and not assembled unless they leave it undecided.
            try translatingErrors {
                try reader.scanFiltered(threads: parallel ? threads : 1, filter: filter, prefixFilter: prefixFilter,
                                        readsAccepted: false) { id, bytes, decided in
                    guard unsaved.isEmpty || unsaved[id] == nil else { return true }
                    try consider(bytes, decided: decided)
                    return wanted.map { found < $0 } ?? true
                }
            }
        }
        for change in pending.values {
            if case .upsert(let bytes, _) = change {
                try bytes.withUnsafeBytes { bytes in
                    let decided = filters ? condition.evaluate(bytes) : nil
                    if decided != false { try consider(bytes, decided: decided) }
                }
            }
        }
        return found
    }

    /// Reads record `id` (a candidate an index named) and passes its bytes and the pre-filter's
    /// answer to `consider` unless the pre-filter rejects it.
    private func readCandidate(_ id: UInt64, _ reader: RecordTreeReader, _ member: UInt32, _ condition: RecordCondition,
                               _ consider: (UnsafeRawBufferPointer, Bool?) throws -> Void) throws {
        let present: Void? = try translatingErrors {
            try reader.withRecord(id) { bytes in
                let decided = condition.evaluate(bytes)
                if decided != false { try consider(bytes, decided) }
            }
        }
        guard present != nil else {
            throw StrataError.corruption(file: "index of entity \(member)", offset: 0,
                                         reason: "the index names record \(id), which does not exist")
        }
    }

    /// Whether the records an index yields for `range` (read by `Store.indexPlan` from
    /// `condition`) are exactly those `condition` accepts, so a count need not read them:
    /// `condition` is one comparison of the attribute with a constant, or a conjunction of
    /// such, all of one value type, none `!=`; the range is an equality or bounded on both
    /// sides (so it holds no null keys, no NaN after +∞ and no key of another kind); the
    /// value a record lacking the attribute reads as is the index's default (the key it is
    /// indexed by), and is not null unless the condition is equalities only (a missing value
    /// is then never equal); a record lacking an attribute without default that does not
    /// decode without it is keyed null, outside the range, and not counted (a fetch would
    /// throw on it). Entries whose keys were stored cut are still re-checked
    /// (`scanIndexExactly`). Strings and data compare as index keys order them: by canonical
    /// equivalence and NFC bytes (invariant 19, `IndexKey`), as Swift compares them.
    static func indexIsExact(for condition: RecordCondition, attributeID: UInt32, range: IndexRange, defaultKey: [UInt8]) -> Bool {
        var constants: [Value] = []
        var equalitiesOnly = true
        var absentValue: Value??
        func collect(_ condition: RecordCondition) -> Bool {
            switch condition {
            case .and(let a, let b): return collect(a) && collect(b)
            case .compare(let id, let comparison, let constant, let absent) where id == attributeID && comparison != .notEqual:
                guard !constant.isNull else { return false }
                if case .double(let d) = constant, d.isNaN { return false }
                if let first = absentValue, first != absent { return false }
                absentValue = .some(absent)
                if comparison != .equal { equalitiesOnly = false }
                constants.append(constant)
                return true
            default: return false
            }
        }
        guard collect(condition), let first = constants.first, let absentValue else { return false }
        guard constants.allSatisfy({ $0.hasSameType(as: first) }) else { return false }
        switch first {
        case .int, .double, .date, .string: break
        case .bool, .uuid: guard equalitiesOnly else { return false }
        default: return false
        }
        guard range.lower != nil, range.upper != nil else { return false }
        // A record lacking the attribute is keyed by the default; with none (the null key,
        // outside the range) it does not decode (a fetch would throw) or, for an optional, is
        // nil, which only equalities decide (false).
        guard let absent = absentValue else { return defaultKey == IndexKey.nullKey }
        if absent.isNull { return equalitiesOnly && defaultKey == IndexKey.nullKey }
        return IndexKey.encode(absent) == defaultKey
    }

    // MARK: Helpers

    /// The entity actually holding record `id` of `entityID` or a sub-entity (ids are unique
    /// in a hierarchy), unsaved changes included; nil when there is none.
    private func locate(_ entityID: UInt32, _ id: UInt64) throws -> UInt32? {
        let family = store.model.family(of: entityID)
        var unsaved = false
        for member in family {
            switch changes[member]?[id] {
            case .upsert?: return member
            case .delete?: unsaved = true
            case nil: break
            }
        }
        if unsaved { return nil }
        let snapshot = try readSnapshot()
        for member in family where try translatingErrors({ try snapshot.reader(for: member).contains(id) }) { return member }
        return nil
    }

    /// The bytes of record `id` of its concrete entity, unsaved changes included.
    private func currentBytes(_ entityID: UInt32, _ id: UInt64) throws -> [UInt8]? {
        switch changes[entityID]?[id] {
        case .upsert(let bytes, _)?: return bytes
        case .delete?: return nil
        case nil:
            let snapshot = try readSnapshot()
            return try translatingErrors { try snapshot.reader(for: entityID).get(id) }
        }
    }

    private func isUnsavedInsert(_ entityID: UInt32, _ id: UInt64) -> Bool {
        if case .upsert(_, true)? = changes[entityID]?[id] { return true }
        return false
    }

    /// Records a change (nil: forget the unsaved insert), keeping `pendingUnique` in step.
    private func setChange(_ change: Change?, _ entityID: UInt32, _ id: UInt64) throws {
        if let uniques = store.uniqueAttributes[entityID] {
            if case .upsert(let bytes, _)? = changes[entityID]?[id] {
                for (attributeID, key) in try uniqueKeys(bytes, entityID, uniques) where pendingUnique[entityID]?[attributeID]?[key] == id {
                    pendingUnique[entityID]?[attributeID]?[key] = nil
                }
            }
            if case .upsert(let bytes, _)? = change {
                for (attributeID, key) in try uniqueKeys(bytes, entityID, uniques) {
                    pendingUnique[entityID, default: [:]][attributeID, default: [:]][key] = id
                }
            }
        }
        changes[entityID, default: [:]][id] = change
    }

    /// The non-null unique values of a record, as full index keys.
    private func uniqueKeys(_ bytes: [UInt8], _ entityID: UInt32,
                            _ uniques: [(attributeID: UInt32, defaultKey: [UInt8])]) throws -> [(UInt32, [UInt8])] {
        try store.translating {
            try uniques.compactMap { attributeID, defaultKey in
                let key = try RecordSnapshot.indexKey(of: attributeID, defaultKey: defaultKey, in: bytes, entityID: entityID)
                return key == IndexKey.nullKey ? nil : (attributeID, key)
            }
        }
    }

    /// The record other than `excluding` — saved (as this context sees it) or unsaved — that
    /// holds one of `bytes`' non-null unique values, and which attribute matched; nil if none.
    /// - Throws: `.uniqueConstraintViolation` when two different records match.
    private func uniqueMatch(_ entityID: UInt32, _ bytes: [UInt8], excluding: UInt64?) throws -> (id: UInt64, attributeID: UInt32)? {
        guard let uniques = store.uniqueAttributes[entityID] else { return nil }
        let keys = try uniqueKeys(bytes, entityID, uniques)
        guard !keys.isEmpty else { return nil }
        let snapshot = try readSnapshot()
        var found: (id: UInt64, attributeID: UInt32)?
        for (attributeID, key) in keys {
            var ids: [UInt64] = []
            if let id = pendingUnique[entityID]?[attributeID]?[key] { ids.append(id) }
            // A saved record with unsaved changes counts with its unsaved values (above).
            for id in try store.translating({ try snapshot.recordIDs(entityID: entityID, attributeID: attributeID, key: key) })
                where changes[entityID]?[id] == nil { ids.append(id) }
            for id in ids where id != excluding {
                if let found, found.id != id {
                    throw store.uniqueViolation(entityID: entityID, attributeID: attributeID, existing: "records \(found.id) and \(id)")
                }
                found = (id, attributeID)
            }
        }
        return found
    }
}
