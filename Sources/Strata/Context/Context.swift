import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import StrataPageLog
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
    // The stored properties a loop of reads and changes touches on every record skip dynamic
    // exclusivity checks (`@exclusivity(unchecked)`): a context is used by one thread at a
    // time and no access to one of them overlaps another (the checks were ~3 % of a
    // migration closure's loop).

    /// The store this context works on.
    public let store: Store
    /// Who makes the changes; recorded with each save (the history journal will carry it).
    public var author: String?
    /// Set for the contexts of a migration stage's closures: `save()` leaves the changes for
    /// `saveWithStage(_:)`, and unsaved changes past `stageFlush`'s bounds are flushed into the
    /// store in commits of the migration (Docs/Migrations.md, "Closures on large stores").
    var savesWithStage = false {
        didSet {
            if savesWithStage && stageFlush == nil { stageFlush = StageFlush(store: store) }
            flushBounds = stageFlush.map { ($0.maximumChanges, $0.maximumBytes) } ?? (.max, .max)
        }
    }
    /// `stageFlush`'s bounds, kept here so that recording a change reads nothing else (`.max`
    /// for a context that saves).
    @exclusivity(unchecked) private var flushBounds: (changes: Int, bytes: Int) = (.max, .max)

    /// Set for a migration closure's context (with `savesWithStage`).
    @exclusivity(unchecked) private(set) var stageFlush: StageFlush?
    /// A flush being written on a thread of its own while the closure goes on (stores without
    /// unique attributes: see `flushIfNeeded`); reads see its changes under the context's own
    /// until the next flush or the closure's last commit waits for it.
    @exclusivity(unchecked) var flushing: Flushing?

    /// How many times this migration closure's context flushed its changes (tests).
    package var stageFlushCount: Int { stageFlush?.flushes ?? 0 }
    /// The unsaved changes past which this migration closure's context flushes (nil: a context
    /// that saves, not a migration closure's).
    package var stageFlushLimit: Int? { stageFlush?.maximumChanges }
    /// How many leaf images this migration closure's flushes took from its enumerations'
    /// reads instead of reading them again (tests).
    package var stageImagesTaken: Int { stageFlush?.pageImages.taken ?? 0 }

    enum Change: Sendable {
        case upsert([UInt8], isNew: Bool)
        case delete
    }

    /// Unsaved changes by entity id, then record id.
    @exclusivity(unchecked) private(set) var changes: [UInt32: [UInt64: Change]] = [:]
    /// A migration closure's context: the tables of the last flush written, to be emptied and
    /// reused by the next changes (`forgetChanges`).
    @exclusivity(unchecked) var spareChanges: [UInt32: [UInt64: Change]] = [:]
    /// How many changes `changes` holds (tests: a migration closure's memory stays bounded),
    /// and the bytes of their encoded records.
    @exclusivity(unchecked) package private(set) var unsavedChangeCount = 0
    @exclusivity(unchecked) private(set) var unsavedBytes = 0
    /// Incremented whenever unsaved changes leave the context at once (saved, flushed, rolled
    /// back): an enumeration then reads the records after its position again.
    @exclusivity(unchecked) private(set) var changeGeneration = 0
    /// Incremented whenever `changes` changes (a change set or forgotten, changes saved,
    /// flushed, rolled back or taken back).
    @exclusivity(unchecked) private(set) var changeStamp = 0
    /// No unsaved change of this context has a larger record id (0: none has): a read of a
    /// record after it needs no lookup in `changes` (an enumeration's visits, in id order).
    @exclusivity(unchecked) private(set) var largestChangedID: UInt64 = 0
    /// The record `enumerate` is visiting: its id, concrete entity, the change generation it
    /// was read in, and — when the context held no unsaved change of it then — the change
    /// stamp of that moment (nil otherwise). Until the generation changes, it exists as the
    /// snapshot read says (or as the context's unsaved change says), so `update` need not look
    /// it up in the store again; while the stamp is unchanged, it has no unsaved change of
    /// this context either, so `update` looks up nothing.
    @exclusivity(unchecked) var visiting: (id: UInt64, entity: UInt32, generation: Int, unchangedAt: Int?)?
    /// The enumerations under way, each told when records it read may have gone stale
    /// (``recordsWentStale(upTo:)``).
    @exclusivity(unchecked) var readWatches: [ReadWatch] = []
    /// The unique values unsaved inserts and updates hold: entity id → attribute id → full
    /// index key → record id (so two inserts of one unique value in a context make one record).
    private(set) var pendingUnique: [UInt32: [UInt32: [[UInt8]: UInt64]]] = [:]

    /// The snapshot every read uses, when the context reads one moment of the store (a
    /// `Store.read` transaction); nil: each read takes the latest snapshot.
    let pinnedSnapshot: RecordSnapshot?
    /// With a pinned snapshot: the record type last read and the readers of its family.
    private var pinnedReaders: (type: ObjectIdentifier, readers: [RecordTreeReader])?
    /// With a pinned snapshot: the interior nodes its point reads went through (made at the
    /// first), so the next reads skip the shared node cache down to a leaf's parent.
    private var pinnedInteriorNodes: InteriorNodeMemo?
    /// The record type last decoded by `record(for:)`, with a decoding session on its
    /// entity's layout (which reuses one decoding state from record to record).
    @exclusivity(unchecked) private var lastDecoding: (type: ObjectIdentifier, session: RecordDecodingSession)?
    /// Encodes the records `insert` and `update` take (a session per type, kept for the type
    /// last encoded).
    @exclusivity(unchecked) private var encodings = RecordEncodings()

    /// A record's entity id and bytes.
    private func encode<Record: PersistentRecord>(_ record: Record) throws -> (entityID: UInt32, bytes: [UInt8]) {
        try encodings.encode(record, in: store)
    }

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

    deinit {
        // A flush being written uses the changes this context holds (`flushIfNeeded`).
        flushing?.finished.wait()
    }

    /// The snapshot a read uses: the pinned one, else the latest.
    func readSnapshot() throws -> RecordSnapshot {
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
        let (entityID, bytes) = try encode(record)
        try store.engine.checkInsertable(entityID)
        if let existing = try uniqueMatch(entityID, bytes, excluding: nil) {
            try setChange(.upsert(bytes, isNew: isUnsavedInsert(entityID, existing.id)), entityID, existing.id)
            return RecordID(rawValue: existing.id)
        }
        let id = store.engine.allocateID(for: entityID)
        try setChange(.upsert(bytes, isNew: true), entityID, id)
        return RecordID(rawValue: id)
    }

    /// Replaces the values of an existing record. A record of a sub-entity updated through its
    /// parent's type keeps the values of its own (sub-entity) properties.
    /// - Throws: `StrataError.recordNotFound` when there is no such record (or it was deleted);
    ///   `.uniqueConstraintViolation` when another record (saved or unsaved) holds one of its
    ///   new unique values (nothing is changed).
    public func update<Record: PersistentRecord>(_ id: RecordID<Record>, to record: Record) throws {
        var (entityID, bytes) = try encode(record)
        if let visiting, visiting.id == id.rawValue, visiting.entity == entityID, visiting.generation == changeGeneration,
           visiting.unchangedAt == changeStamp {
            // The record `enumerate` is visiting, of this very entity, with no unsaved change
            // of this context: it exists and is no unsaved insert (what `locate` and
            // `isUnsavedInsert` would find), and there is no previous change to replace.
            if let other = try uniqueMatch(entityID, bytes, excluding: id.rawValue) {
                throw store.uniqueViolation(entityID: entityID, attributeID: other.attributeID, existing: "record \(other.id)")
            }
            try setChange(.upsert(bytes, isNew: false), entityID, id.rawValue)
            return
        }
        guard let concreteID = try locate(entityID, id.rawValue) else { throw StrataError.recordNotFound(id.description) }
        if concreteID != entityID, let current = try currentBytes(concreteID, id.rawValue) {
            bytes = try store.engine.merge(bytes, as: entityID, into: current)
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
        recordsWentStale(upTo: largestChangedID)
        forgetChanges()
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
        _ = try await store.runOffTheCooperativePool { try Self.write(changes, to: store, author: author) }
        recordsWentStale(upTo: largestChangedID)
        forgetChanges()
    }

    /// Empties the context's unsaved changes (saved or rolled back).
    func forgetChanges() {
        if stageFlush != nil {
            // A migration closure's next changes are likely as many per entity as these: room
            // for them from the start, not a table grown by doubling each time — the tables of
            // the flush written last, emptied, when there are (no new memory to fault in).
            var next = spareChanges
            spareChanges = [:]
            for (entityID, entityChanges) in changes {
                if next[entityID] == nil { next[entityID] = Dictionary(minimumCapacity: entityChanges.count) }
            }
            // (The keys copied first: a view of them would share the tables, then copied whole.)
            for entityID in Array(next.keys) { next[entityID]?.removeAll(keepingCapacity: true) }
            changes = next
        } else {
            changes.removeAll()
        }
        pendingUnique.removeAll()
        unsavedChangeCount = 0
        unsavedBytes = 0
        changeGeneration += 1
        changeStamp &+= 1
        largestChangedID = 0
    }

    /// Puts changes back under the unsaved ones (those made since win): a flush that failed.
    func takeBack(_ taken: [UInt32: [UInt64: Change]]) {
        recordsWentStale(upTo: .max)
        for (entityID, entityChanges) in taken {
            for (id, change) in entityChanges where changes[entityID]?[id] == nil {
                changes[entityID, default: [:]][id] = change
                largestChangedID = max(largestChangedID, id)
                unsavedChangeCount += 1
                unsavedBytes += Self.cost(of: change)
            }
        }
        changeGeneration += 1
        changeStamp &+= 1
    }

    /// The unsaved change of record `id` of (concrete) entity `entityID` as reads see it: this
    /// context's, else that of the flush being written.
    func change(_ entityID: UInt32, _ id: UInt64) -> Change? {
        ownChange(entityID, id) ?? inFlightChange(entityID, id)
    }

    /// This context's unsaved change of record `id` of entity `entityID`, if any.
    func ownChange(_ entityID: UInt32, _ id: UInt64) -> Change? {
        id <= largestChangedID ? changes[entityID]?[id] : nil
    }

    /// The change of record `id` of entity `entityID` in the flush being written, if any.
    func inFlightChange(_ entityID: UInt32, _ id: UInt64) -> Change? {
        guard let flushing, id <= flushing.largestID else { return nil }
        return flushing.changes[entityID]?[id]
    }

    /// Every unsaved change of an entity as reads see them (the context's over the flush's).
    func pendingChanges(of entityID: UInt32) -> [UInt64: Change] {
        guard let inFlight = flushing?.changes[entityID], !inFlight.isEmpty else { return changes[entityID] ?? [:] }
        return inFlight.merging(changes[entityID] ?? [:]) { _, unsaved in unsaved }
    }

    /// Forgets every unsaved change.
    public func rollback() {
        recordsWentStale(upTo: .max)
        forgetChanges()
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
        if pinnedSnapshot != nil {
            // A read transaction: nothing unsaved, one snapshot — the readers of the type's
            // family are resolved once and reused while the type stays the same. (The snapshot
            // is not bound here: a copy of it is a handful of retains and releases per read.)
            let key = ObjectIdentifier(type)
            if pinnedReaders?.type != key, let pinnedSnapshot {
                let family = store.model.family(of: try store.entityID(of: type))
                pinnedReaders = (key, family.map { pinnedSnapshot.reader(for: $0) })
            }
            guard let readers = pinnedReaders?.readers else { return }
            let memo: InteriorNodeMemo
            if let pinnedInteriorNodes { memo = pinnedInteriorNodes } else {
                memo = InteriorNodeMemo()
                pinnedInteriorNodes = memo
            }
            for index in readers.indices {
                if try translatingErrors({ try readers[index].withRecordBytes(id, memo: memo, body) }) { return }
            }
            return
        }
        let family = store.model.family(of: try store.entityID(of: type))
        for member in family {
            switch change(member, id) {
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
        var pending = pendingChanges(of: entityID)
        for member in family where member != entityID { pending.merge(pendingChanges(of: member)) { first, _ in first } }
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
        -> (RecordFilter, (@Sendable (UnsafeRawBufferPointer, Int) -> RecordCondition.PrefixAnswer)?) {
        guard condition.isUseful else { return (RecordFilter { _ in nil }, nil) }
        return (RecordFilter(condition), { condition.evaluate(prefix: $0, recordLength: $1) })
    }

    /// The fewest records a tree holds for a filtered fetch to scan it on several threads
    /// (`Store.Configuration.scanThreads`): below it, starting threads costs more than they save.
    static let parallelScanMinimum: UInt64 = 20_000

    // MARK: Helpers

    /// The entity actually holding record `id` of `entityID` or a sub-entity (ids are unique
    /// in a hierarchy), unsaved changes included; nil when there is none.
    private func locate(_ entityID: UInt32, _ id: UInt64) throws -> UInt32? {
        let family = store.model.family(of: entityID)
        var unsaved = false
        for member in family {
            switch change(member, id) {
            case .upsert?: return member
            case .delete?: unsaved = true
            case nil: break
            }
        }
        if unsaved { return nil }
        // The record `enumerate` is visiting exists (read in this change generation, and no
        // unsaved change of this context deleted it: above).
        if let visiting, visiting.id == id, visiting.generation == changeGeneration, family.contains(visiting.entity) {
            return visiting.entity
        }
        let snapshot = try readSnapshot()
        for member in family where try translatingErrors({ try snapshot.reader(for: member).contains(id) }) { return member }
        return nil
    }

    /// The bytes of record `id` of its concrete entity, unsaved changes included.
    private func currentBytes(_ entityID: UInt32, _ id: UInt64) throws -> [UInt8]? {
        switch change(entityID, id) {
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
        if !store.engine.uniqueAttributes.isEmpty, let uniques = store.engine.uniqueAttributes[entityID] {
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
        // One lookup: the change set and the one it replaces.
        let previous = change.map { changes[entityID, default: [:]].updateValue($0, forKey: id) } ?? changes[entityID]?.removeValue(forKey: id)
        changeStamp &+= 1
        largestChangedID = max(largestChangedID, id)
        if previous != nil { unsavedChangeCount -= 1; unsavedBytes -= Self.cost(of: previous) }
        if change != nil { unsavedChangeCount += 1; unsavedBytes += Self.cost(of: change) }
        // A migration closure's context past its flush bounds (other contexts have none).
        if unsavedChangeCount >= flushBounds.changes || unsavedBytes >= flushBounds.bytes { try flushIfNeeded() }
    }

    /// The memory a change takes, roughly: its encoded record and the dictionary entry.
    static func cost(of change: Change?) -> Int {
        if case .upsert(let bytes, _)? = change { return bytes.count + 48 }
        return change == nil ? 0 : 48
    }
}
