import StrataRecords

extension Store {
    /// Runs `body` as one atomic write transaction that changes records directly — the bulk
    /// path for imports and batch jobs: records are written to the store as `body` runs (and
    /// spilled to the log as its buffers fill), so memory stays bounded however many records
    /// the transaction holds. If `body` throws, nothing it wrote becomes visible.
    ///
    /// One write transaction runs at a time (others, and `Context.save()`, wait for it).
    /// Readers keep reading the state before it until it commits.
    ///
    /// - Throws: what `body` throws; storage errors; `.recordCoding`, `.unknownEntity`.
    public func write<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        try translating {
            try records.write(durability: configuration.durability.pageLogDurability) { transaction in
                try body(WriteTransaction(store: self, transaction: transaction))
            }
        }
    }

    /// A transaction passed to `Store.write`; valid only inside its body, on that thread.
    public final class WriteTransaction {
        let store: Store
        let transaction: RecordTransaction

        init(store: Store, transaction: RecordTransaction) {
            self.store = store
            self.transaction = transaction
        }

        /// Inserts a record and returns its identifier. When a unique attribute of the record
        /// (non-null) holds the value an existing record holds, that record is updated with the
        /// new values instead and its identifier returned (an upsert, as SwiftData does).
        /// - Throws: `StrataError.uniqueConstraintViolation` when the record's unique values
        ///   match two different records (nothing is changed).
        @discardableResult
        public func insert<Record: PersistentRecord>(_ record: Record) throws -> RecordID<Record> {
            let (entityID, bytes) = try store.encode(record)
            return try store.translating {
                if let existing = try transaction.uniqueMatch(entityID: entityID, schemaVersion: store.binding.versionID, bytes: bytes) {
                    try tree(entityID).update(existing, bytes: bytes)
                    return RecordID(rawValue: existing)
                }
                let id = store.allocateID(for: entityID)
                transaction.reserve(id, for: entityID)
                try tree(entityID).insert(id, bytes: bytes)
                return RecordID(rawValue: id)
            }
        }

        /// Replaces an existing record.
        /// - Throws: `StrataError.recordNotFound` when there is none;
        ///   `.uniqueConstraintViolation` when another record holds one of its new unique values.
        public func update<Record: PersistentRecord>(_ id: RecordID<Record>, to record: Record) throws {
            let (entityID, bytes) = try store.encode(record)
            guard try store.translating({ try tree(entityID).update(id.rawValue, bytes: bytes) }) else {
                throw StrataError.recordNotFound(id.description)
            }
        }

        /// Deletes a record; returns false when there was none.
        @discardableResult
        public func delete<Record: PersistentRecord>(_ id: RecordID<Record>) throws -> Bool {
            let entityID = try store.entityID(of: Record.self)
            return try store.translating { try tree(entityID).delete(id.rawValue) }
        }

        /// The record with this identifier as this transaction sees it, or nil.
        public func record<Record: PersistentRecord>(for id: RecordID<Record>) throws -> Record? {
            let entityID = try store.entityID(of: Record.self)
            guard let bytes = try store.translating({ try tree(entityID).get(id.rawValue) }) else { return nil }
            return try bytes.withUnsafeBytes { try store.decode(Record.self, from: $0) }
        }

        private func tree(_ entityID: UInt32) -> RecordTreeWriter {
            transaction.tree(for: entityID, schemaVersion: store.binding.versionID)
        }
    }
}
