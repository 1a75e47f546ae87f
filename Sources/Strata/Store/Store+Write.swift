import Dispatch
import StrataRecords
import StrataSchema

extension Store {
    /// Runs `body` as one atomic write transaction that changes records directly — the bulk
    /// path for imports and batch jobs: records are written to the store as `body` runs (and
    /// spilled to the log as its buffers fill), so memory stays bounded however many records
    /// the transaction holds. If `body` throws, nothing it wrote becomes visible.
    ///
    /// Relationships are kept consistent as each change is made, as by `Context.save()`
    /// (inverses, delete rules, reference checks); a change that is refused throws, and the
    /// whole transaction is abandoned if `body` lets the error through.
    ///
    /// One write transaction runs at a time (others, and `Context.save()`, wait for it).
    /// Readers keep reading the state before it until it commits.
    ///
    /// The transaction is journaled as `author`'s (see `Context.author` and `fetchHistory`).
    ///
    /// - Throws: what `body` throws; storage errors; `.recordCoding`, `.unknownEntity`;
    ///   `.readOnly` for a store opened read-only.
    public func write<T>(author: String? = nil, _ body: (WriteTransaction) throws -> T) throws -> T {
        try checkWritable()
        return try translating {
            try records.write(durability: configuration.durability) { transaction in
                beginJournal(transaction, author: author)
                let writeTransaction = WriteTransaction(store: self, transaction: transaction)
                defer { writeTransaction.releaseUnusedIDs() }
                let result = try body(writeTransaction)
                writeTransaction.recordUsedIDs()
                return result
            }
        }
    }

    /// Runs `body` as one atomic write transaction, as ``write(_:)-(WriteTransaction)->T`` does,
    /// without blocking the caller's thread: waiting for another writer, the body and (with
    /// `.durable`) the sync run on a thread of its own while the calling task is suspended.
    /// A transaction that has started is not cancelled with its task.
    /// - Throws: as the synchronous `write`.
    public func write<T: Sendable>(author: String? = nil, _ body: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        try await runOffTheCooperativePool { try self.write(author: author, body) }
    }

    /// Opens (creating when missing) the store at `path` for `schema`, as
    /// ``init(at:schema:configuration:)`` does — recovery and binding the schema included —
    /// on a thread of its own while the calling task is suspended.
    /// - Throws: as ``init(at:schema:configuration:)``.
    public static func open(at path: String, schema: Schema, configuration: Configuration = Configuration()) async throws -> Store {
        try await runOffTheCooperativePool { try Store(at: path, schema: schema, configuration: configuration) }
    }

    /// Runs blocking work (locks, syncs, file I/O) on a Dispatch thread and resumes the
    /// calling task with its result, so Swift concurrency's cooperative threads never block.
    func runOffTheCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await Self.runOffTheCooperativePool(work)
    }

    static func runOffTheCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// A transaction passed to `Store.write`; valid only inside its body, on that thread.
    public final class WriteTransaction {
        let store: Store
        let graph: GraphTransaction
        /// The record types inserted through the bulk path so far (a few: searched in turn).
        @exclusivity(unchecked) private var bulkTargets: [BulkInsertTarget] = []
        /// Encodes the records `insert` (outside the bulk path) and `update` take.
        @exclusivity(unchecked) private var encodings = RecordEncodings()

        init(store: Store, transaction: RecordTransaction) {
            self.store = store
            graph = GraphTransaction(store: store, transaction: transaction)
        }

        /// Inserts a record and returns its identifier. When a unique attribute of the record
        /// (non-null) holds the value an existing record holds, that record is updated with the
        /// new values instead and its identifier returned (an upsert, as SwiftData does).
        /// - Throws: `StrataError.uniqueConstraintViolation` when the record's unique values
        ///   match two different records (nothing is changed); `.abstractEntity`,
        ///   `.danglingReference`, `.recordCoding`, `.unknownEntity`, storage errors.
        @discardableResult
        public func insert<Record: PersistentRecord>(_ record: Record) throws -> RecordID<Record> {
            if let target = try bulkTarget(for: Record.self), graph.isIdle {
                return RecordID(rawValue: try insert(record, into: target))
            }
            let (entityID, bytes) = try encodings.encode(record, in: store)
            try store.engine.checkInsertable(entityID)
            if let existing = try store.translating({
                try graph.transaction.uniqueMatch(entityID: entityID, schemaVersion: store.binding.versionID, bytes: bytes)
            }) {
                graph.stageUpsert(entityID: entityID, id: existing, bytes: bytes, isNew: false)
                try store.translating { try graph.commit() }
                return RecordID(rawValue: existing)
            }
            let id = store.engine.allocateID(for: entityID)
            try store.translating {
                if try !graph.insertNow(entityID: entityID, id: id, bytes: bytes) {
                    graph.stageUpsert(entityID: entityID, id: id, bytes: bytes, isNew: true)
                    try graph.commit()
                }
            }
            return RecordID(rawValue: id)
        }

        /// Replaces an existing record (of the type's entity or a sub-entity, which keeps its
        /// own properties' values).
        /// - Throws: `StrataError.recordNotFound` when there is none; `.uniqueConstraintViolation`
        ///   when another record holds one of its new unique values; `.danglingReference`,
        ///   `.requiredRelationship`, `.recordCoding`, storage errors.
        public func update<Record: PersistentRecord>(_ id: RecordID<Record>, to record: Record) throws {
            var (entityID, bytes) = try encodings.encode(record, in: store)
            if let updated = try graph.updateNow(entityID: entityID, id: id.rawValue, bytes: bytes) {
                guard updated else { throw StrataError.recordNotFound(id.description) }
                return
            }
            guard let concreteID = try graph.locate(entityID: entityID, id: id.rawValue) else {
                throw StrataError.recordNotFound(id.description)
            }
            if concreteID != entityID, let stored = try graph.storedBytes(entityID: concreteID, id: id.rawValue) {
                bytes = try store.engine.merge(bytes, as: entityID, into: stored)
                entityID = concreteID
            }
            graph.stageUpsert(entityID: entityID, id: id.rawValue, bytes: bytes, isNew: false)
            try store.translating { try graph.commit() }
        }

        /// Deletes a record, running delete rules; returns false when there was none.
        /// - Throws: `StrataError.deleteDenied`, `.requiredRelationship`, storage errors.
        @discardableResult
        public func delete<Record: PersistentRecord>(_ id: RecordID<Record>) throws -> Bool {
            let declaredID = try store.entityID(of: Record.self)
            if let deleted = try graph.deleteNow(entityID: declaredID, id: id.rawValue) { return deleted }
            guard let entityID = try graph.locate(entityID: declaredID, id: id.rawValue) else { return false }
            graph.stageDelete(entityID: entityID, id: id.rawValue)
            try store.translating { try graph.commit() }
            return true
        }

        /// The record with this identifier as this transaction sees it (a sub-entity's record
        /// read as `Record`), or nil.
        public func record<Record: PersistentRecord>(for id: RecordID<Record>) throws -> Record? {
            guard let entityID = try graph.locate(entityID: try store.entityID(of: Record.self), id: id.rawValue),
                  let bytes = try graph.storedBytes(entityID: entityID, id: id.rawValue) else { return nil }
            return try bytes.withUnsafeBytes { try store.decode(Record.self, from: $0) }
        }
    }
}

/// What inserting records of one type through `Store.write` needs, resolved at its first
/// insert: for an entity that can be inserted, with no relationship and no unique attribute,
/// an insert is encode, take an id, put into the tree — nothing to look up per record.
/// Used on the transaction's thread only, so its counters skip exclusivity checks.
final class BulkInsertTarget {
    let type: ObjectIdentifier
    /// Encodes the type's records, reusing its state and buffer from one record to the next.
    let encoder: RecordEncodingSession
    let rootID: UInt32
    let tree: RecordTreeWriter
    /// Identifiers reserved from the store's counter and not handed out yet.
    @exclusivity(unchecked) var reserved: Range<UInt64> = 0..<0
    /// The next block reserved is this large (doubling up to `largestBlock`), so small
    /// transactions reserve few ids and large ones take the store's lock rarely.
    @exclusivity(unchecked) var blockSize: UInt64 = 1
    /// The largest id handed out (0: none).
    @exclusivity(unchecked) var highestUsed: UInt64 = 0

    static let largestBlock: UInt64 = 1024

    init(type: ObjectIdentifier, layout: RecordLayout, rootID: UInt32, tree: RecordTreeWriter) {
        self.type = type
        encoder = RecordEncodingSession(layout: layout)
        self.rootID = rootID
        self.tree = tree
    }
}

extension Store.WriteTransaction {
    /// The bulk-insert target of `Record`'s entity, or nil when its inserts take the general
    /// path (relationships, unique attributes, an abstract entity).
    fileprivate func bulkTarget<Record: PersistentRecord>(for type: Record.Type) throws -> BulkInsertTarget? {
        let key = ObjectIdentifier(type)
        for target in bulkTargets where target.type == key { return target }
        let entityID = try store.entityID(of: type)
        guard store.model.relationships(of: entityID).isEmpty, store.engine.uniqueAttributes[entityID] == nil,
              store.model.info(entityID)?.isAbstract != true else { return nil }
        let target = BulkInsertTarget(type: key, layout: store.binding.layout(of: entityID), rootID: store.model.rootID(of: entityID),
                                      tree: graph.transaction.tree(for: entityID, schemaVersion: store.binding.versionID))
        bulkTargets.append(target)
        return target
    }

    /// Inserts `record` into `target`'s tree under a new id, which it returns.
    fileprivate func insert<Record: PersistentRecord>(_ record: Record, into target: BulkInsertTarget) throws -> UInt64 {
        // The session's own bytes, valid until its next record: the tree copies them. A record
        // holding a large data value comes in pieces instead, the value's straight from the
        // caller's `Data`: it is never copied whole.
        let bytes: UnsafeRawBufferPointer?
        do { bytes = try store.binding.encodeInPlaceUnlessSpliced(record, with: target.encoder) } catch {
            throw StrataError.recordCoding(reason: "\(error)")
        }
        if target.reserved.isEmpty {
            let first = store.engine.reserveIDs(root: target.rootID, count: target.blockSize)
            target.reserved = first..<(first + target.blockSize)
            target.blockSize = min(target.blockSize * 2, BulkInsertTarget.largestBlock)
        }
        let id = target.reserved.lowerBound
        target.reserved = (id + 1)..<target.reserved.upperBound
        target.highestUsed = max(target.highestUsed, id)
        try store.translating {
            if let bytes { try target.tree.insert(id, raw: bytes) } else { try target.encoder.withPieces { try target.tree.insert(id, pieces: $0) } }
        }
        return id
    }

    /// Makes the ids the bulk path handed out durable with the transaction (never handed
    /// out again, even if their records are deleted).
    func recordUsedIDs() {
        for target in bulkTargets where target.highestUsed > 0 {
            graph.transaction.reserve(target.highestUsed, for: target.rootID)
        }
    }

    /// Gives the store back the ids reserved and not handed out.
    func releaseUnusedIDs() {
        for target in bulkTargets { store.engine.releaseIDs(root: target.rootID, unused: target.reserved) }
    }
}
