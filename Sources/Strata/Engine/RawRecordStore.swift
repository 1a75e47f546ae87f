import StrataIO
import StrataPageLog
import StrataRecords

/// Records as raw bytes, keyed by entity id and record id, in one B+tree per entity: the
/// engine under Strata's typed record API, exposed for benchmarks and tools
/// (`@_spi(Engine) import Strata`). Apps use the typed API.
///
/// Thread-safe: one write transaction at a time; snapshots never wait.
@_spi(Engine)
public final class RawRecordStore: Sendable {
    let store: RecordStore

    private init(store: RecordStore) { self.store = store }

    /// Opens (creating when missing) the store in the folder at `path`.
    /// - Parameter cacheBytes: the budget of the shared cache of verified tree nodes.
    /// - Throws: `StrataError.locked`, `.corruption`, `.unsupportedFormatVersion`, `.io`.
    public static func open(at path: String, options: PageStore.Options = PageStore.Options(),
                            cacheBytes: Int = 32 << 20) throws -> RawRecordStore {
        try translatingErrors {
            let log = try PageLog.open(directory: path, fileSystem: options.fileSystem, options: options.pageLogOptions)
            return RawRecordStore(store: RecordStore(log: log, cache: NodeCache(budget: cacheBytes)))
        }
    }

    /// Runs `body` as one atomic transaction over any number of entities.
    public func write<T>(durability: PageStore.Durability = .durable, _ body: (Transaction) throws -> T) throws -> T {
        try translatingErrors {
            try store.write(durability: durability) { try body(Transaction($0)) }
        }
    }

    /// A consistent view of every entity as of the latest commit.
    public func snapshot() throws -> Snapshot {
        try translatingErrors { Snapshot(base: try store.snapshot()) }
    }

    /// Checkpoints and closes the store.
    public func close() throws {
        try translatingErrors { try store.log.close() }
    }

    /// A write transaction; valid only inside the body passed to `write`.
    public final class Transaction {
        let base: RecordTransaction

        init(_ base: RecordTransaction) { self.base = base }

        /// A new record id for `entity`; ids of committed records are never handed out again.
        public func allocateID(entity: UInt32) -> UInt64 { base.allocateRowID(for: entity) }

        /// Inserts a record. Throws when the id exists.
        public func insert(entity: UInt32, id: UInt64, bytes: [UInt8]) throws {
            try translatingErrors { try base.tree(for: entity, schemaVersion: 1).insert(id, bytes: bytes) }
        }

        /// Replaces a record; false when there is none.
        @discardableResult
        public func update(entity: UInt32, id: UInt64, bytes: [UInt8]) throws -> Bool {
            try translatingErrors { try base.tree(for: entity, schemaVersion: 1).update(id, bytes: bytes) }
        }

        /// Removes a record; false when there is none.
        @discardableResult
        public func delete(entity: UInt32, id: UInt64) throws -> Bool {
            try translatingErrors { try base.tree(for: entity, schemaVersion: 1).delete(id) }
        }

        /// A record as this transaction sees it.
        public func get(entity: UInt32, id: UInt64) throws -> [UInt8]? {
            try translatingErrors { try base.tree(for: entity, schemaVersion: 1).get(id) }
        }
    }

    /// A consistent read-only view. Thread-safe.
    public struct Snapshot: Sendable {
        let base: RecordSnapshot

        /// The record, or nil.
        public func get(entity: UInt32, id: UInt64) throws -> [UInt8]? {
            try translatingErrors { try base.reader(for: entity).get(id) }
        }

        /// The number of records of an entity.
        public func count(entity: UInt32) -> Int { Int(base.root.entities[entity]?.tree.count ?? 0) }

        /// Calls `body` with every record of `entity` in id order until it returns false; the
        /// bytes are valid only during the call.
        public func scan(entity: UInt32, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
            try translatingErrors { try base.reader(for: entity).scan(body) }
        }
    }
}
