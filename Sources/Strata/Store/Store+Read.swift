import StrataRecords

extension Store {
    /// Runs `body` with a read-only view of the store as it is at this moment: every read in
    /// `body` sees the same committed state, whatever other threads commit meanwhile (SQLite's
    /// read transaction, GRDB's `read`). Taking the snapshot once also makes many reads
    /// cheaper than the same reads through a `Context`, which takes one per read.
    ///
    /// The transaction holds its snapshot until `body` returns, which keeps the log space of
    /// pages replaced meanwhile from being reused; keep it short-lived.
    ///
    /// - Throws: what `body` throws; storage errors.
    public func read<T>(_ body: (ReadTransaction) throws -> T) throws -> T {
        let snapshot = try snapshot()
        return try body(ReadTransaction(context: Context(self, reading: snapshot)))
    }

    /// Runs `body` as ``read(_:)-(ReadTransaction)->T`` does, on a thread of its own (reads
    /// may wait for the disk) while the calling task is suspended.
    /// - Throws: as the synchronous `read`.
    public func read<T: Sendable>(_ body: @escaping @Sendable (ReadTransaction) throws -> T) async throws -> T {
        try await runOffTheCooperativePool { try self.read(body) }
    }

    /// A read-only view of one moment of a store, passed to `Store.read`; valid only inside
    /// its body, on that thread.
    public final class ReadTransaction {
        /// Reads through a context that never changes anything and reads the pinned snapshot.
        @usableFromInline let context: Context

        init(context: Context) {
            self.context = context
        }

        /// The record with this identifier (a sub-entity's record read as `Record`), or nil.
        /// - Throws: `.recordCoding` when the stored record cannot be read as `Record`;
        ///   `.unknownEntity`; storage errors.
        @inlinable
        public func record<Record: PersistentRecord>(for id: RecordID<Record>) throws -> Record? {
            try context.record(for: id)
        }

        /// The records a descriptor selects, in its order, with their identifiers (records of
        /// sub-entities included, read as `Record`).
        /// - Throws: as `Context.fetch(_:)`.
        public func fetch<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>) throws -> [Identified<Record>] {
            try context.fetch(descriptor)
        }

        /// Calls `block` with each record a descriptor selects, in identifier order (or the
        /// descriptor's sort order), reading `batchSize` records at a time from the pinned
        /// snapshot: memory bounded by a batch, not by the store.
        /// - Throws: as `Context.enumerate(_:batchSize:_:)`.
        public func enumerate<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>, batchSize: Int = 5_000,
                                                        _ block: (Identified<Record>) throws -> Void) throws {
            try context.enumerate(descriptor, batchSize: batchSize, block)
        }

        /// How many records a descriptor selects (limit and offset applied), counted as
        /// `Context.fetchCount(_:)` counts them: without a predicate from the store root's
        /// record counts (no record read), with one decoding only the records the byte-level
        /// pre-filter leaves undecided.
        /// - Throws: as `Context.fetchCount(_:)`.
        public func fetchCount<Record: PersistentRecord>(_ descriptor: FetchDescriptor<Record>) throws -> Int {
            try context.fetchCount(descriptor)
        }
    }
}
